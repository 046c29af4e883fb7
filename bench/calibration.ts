// How fast this machine runs JavaScript of the kind the service runs, on the service's core. The
// ratios the bench reports are against a bare node:http server, whose time is mostly the kernel's
// (its sockets); the service's is mostly JavaScript. Sessions' machines have differed in one and not
// the other: on one the service took 2-3 times the CPU a request of another's for the same code
// while the bare server's rate moved far less (docs/performance.md, round 27). Timing a fixed piece
// of JavaScript before and after the cases says which kind of machine a run had, so that runs on
// different machines can be read side by side.
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { pinned, repoRoot } from "./proc.ts"

const run = promisify(execFile)

/** A profile answer shaped as the service's envelopes are, a little different for each `n`. */
const envelopeOf = (n: number) => ({
  data: {
    id: `profile_${n}`,
    name: "Ada Lovelace",
    headline: "Analyst of engines",
    followers: (n * 7919) % 100_000,
    skills: ["mathematics", "poetry", "engines", `skill ${n % 13}`],
    positions: [0, 1, 2].map((i) => ({
      title: `Position ${i}`,
      company: `Company ${(n + i) % 17}`,
      from: 1830 + ((n + i) % 30)
    }))
  },
  receipt: { call_id: `call_${n.toString(36)}`, operation: "getProfile", charged: 1 + (n % 3), settled: true }
})

/**
 * One round of the fixed work: an envelope made, serialised and parsed again, its parts read, and
 * its size kept in a bounded map by its call id (as the service's memories do). Returns a number
 * that depends on all of it: the checksum the test pins, so that a change to the work shows.
 */
export const calibrationRound = (n: number, kept: Map<string, number>): number => {
  const text = JSON.stringify(envelopeOf(n))
  const back = JSON.parse(text) as ReturnType<typeof envelopeOf>
  kept.set(back.receipt.call_id, text.length)
  if (kept.size > 1000) kept.delete(kept.keys().next().value as string)
  let sum = text.length + back.receipt.charged
  for (const position of back.data.positions) sum += position.from + position.company.length
  return sum
}

/** `rounds` rounds from round 0: the same number on every machine for the same work. */
export const calibrationChecksum = (rounds: number): number => {
  const kept = new Map<string, number>()
  let sum = 0
  for (let n = 0; n < rounds; n++) sum = (sum + calibrationRound(n, kept)) % 1_000_000_007
  return sum
}

/** The line the reports print: the work's time before the cases and after them. */
export const calibrationLine = (before: Calibration, after: Calibration): string => {
  const figure = (c: Calibration) =>
    `${c.usPerRound.toFixed(2)} (batches ${c.fastest.toFixed(2)}-${c.slowest.toFixed(2)})`
  return `JavaScript on core 0 (bench/calibration.ts): µs a round ${figure(before)} at the start, ${figure(after)} at the end (the same work on every machine: a higher figure, a machine slower at the service's kind of work)`
}

export interface Calibration {
  /** Microseconds a round of the work, the median of its timed batches, after a warm-up. */
  readonly usPerRound: number
  /** The fastest and the slowest batch: the machine's speed has moved within seconds. */
  readonly fastest: number
  readonly slowest: number
}

/** The work timed in a process of its own on core 0, where the bench runs the service. */
export const calibrate = async (): Promise<Calibration> => {
  const { command, args } = pinned(0, process.execPath, [join(repoRoot, "bench", "calibration-child.ts")])
  const { stdout } = await run(command, args, { timeout: 60_000 })
  const result = JSON.parse(stdout) as Calibration
  if (!(Number.isFinite(result.usPerRound) && result.usPerRound > 0)) {
    throw new Error(`the calibration printed no time: ${stdout}`)
  }
  return result
}

/** Times batches of rounds for `batchMs` each, after `warmUpMs` of the same: the median, fastest and slowest batch. */
export const timeRounds = (warmUpMs: number, batchMs: number, batches: number): Calibration => {
  const kept = new Map<string, number>()
  let n = 0
  const until = (ms: number) => {
    const start = performance.now()
    let rounds = 0
    while (performance.now() - start < ms) {
      for (let i = 0; i < 100; i++) calibrationRound(n++, kept)
      rounds += 100
    }
    return ((performance.now() - start) * 1000) / rounds
  }
  until(warmUpMs)
  const times = Array.from({ length: batches }, () => until(batchMs)).sort((a, b) => a - b)
  return { usPerRound: times[Math.floor(times.length / 2)]!, fastest: times[0]!, slowest: times.at(-1)! }
}
