// Run by `calibrate` (bench/calibration.ts) on core 0: prints the time a round of the fixed work
// takes on this machine, as JSON.
import { timeRounds } from "./calibration.ts"

process.stdout.write(JSON.stringify(timeRounds(500, 200, 10)))
