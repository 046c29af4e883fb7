import { Effect } from "effect"
import { runSchedule } from "./simulation.ts"
const steps: any[] = [{ kind: "mint", client: 0, instance: 0 }, { kind: "tick", ms: 3_600_000 }, { kind: "tick", ms: 65_000 }]
const t = performance.now()
const r = await Effect.runPromise(runSchedule(steps, { seed: "1", instances: 3, clients: 2, mutation: undefined, pgUrl: undefined, verbose: true }))
console.log(r.ok, r.trace, performance.now() - t)
