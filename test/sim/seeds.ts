/**
 * Many seeds at once: `npm run sim -- --jobs N --seeds A..B [--budget S] [run options]` runs each
 * seed in a child process of its own (`npm run sim -- --seed X --no-shrink` with the same run
 * options), at most N at a time, and prints one line per seed as it ends and a summary. With
 * `--budget S` a seed is started only while fewer than S seconds have passed (`A..` then has no end).
 * A failing seed prints its broken invariants and the command that replays (and shrinks) it.
 */
import { spawn } from "node:child_process"
import { resolve } from "node:path"

export interface SeedsArgs {
  readonly jobs: number
  readonly from: number
  /** The last seed; undefined: as many as the budget allows. */
  readonly to: number | undefined
  /** Seconds during which new seeds are started. */
  readonly budget: number | undefined
  /** The run options every seed is given (the command line less --jobs, --seeds, --budget). */
  readonly runArgs: ReadonlyArray<string>
}

/** `A..B` or `A..` (then a budget is needed), or one seed `A`; non-negative integers. */
export const parseSeedRange = (text: string): { readonly from: number; readonly to: number | undefined } => {
  const found = /^(\d+)(?:\.\.(\d*))?$/.exec(text.trim())
  if (found === null) throw new Error(`--seeds takes A..B or A.. (non-negative integers), not ${text}`)
  const from = Number(found[1])
  const to = found[2] === undefined ? from : found[2] === "" ? undefined : Number(found[2])
  if (to !== undefined && to < from) throw new Error(`--seeds ${text}: the last seed is before the first`)
  return { from, to }
}

/** What a seed's run said on its last line (`sim seed=... result=... trace=...`), and how long it took. */
export interface SeedOutcome {
  readonly seed: number
  readonly ok: boolean
  readonly steps: number | undefined
  readonly requests: number | undefined
  readonly trace: string | undefined
  readonly seconds: number
  /** The report's `invariant broken:` lines, or why the run gave no report. */
  readonly broken: ReadonlyArray<string>
}

/** Reads a seed's output: its summary line's fields and its broken invariants. */
export const outcomeOf = (
  seed: number,
  output: string,
  exitCode: number | null,
  seconds: number
): SeedOutcome => {
  const lines = output.split("\n")
  const last = lines.filter((line) => line.startsWith("sim seed=")).at(-1)
  const field = (name: string) =>
    last === undefined ? undefined : new RegExp(`(?:^| )${name}=(\\S+)`).exec(last)?.[1]
  const number = (name: string) => {
    const value = field(name)
    return value === undefined ? undefined : Number(value)
  }
  const ok = exitCode === 0 && field("result") === "ok"
  const broken = lines
    .filter((line) => line.trimStart().startsWith("invariant broken:"))
    .map((line) => line.trim())
  return {
    seed,
    ok,
    steps: number("steps"),
    requests: number("ops"),
    trace: field("trace"),
    seconds,
    broken:
      ok || broken.length > 0
        ? broken
        : [
            `no report (exit ${exitCode}): ${
              lines
                .filter((line) => line.trim() !== "")
                .slice(-3)
                .join(" | ") || "no output"
            }`
          ]
  }
}

/** The command that replays a seed alone (and shrinks it when it fails). */
export const replayCommand = (seed: number, runArgs: ReadonlyArray<string>): string =>
  ["npm run sim --", "--seed", String(seed), ...runArgs].join(" ")

/** One line per seed: seed, steps, requests, trace, time, pass or fail; a failure adds what broke and its replay. */
export const seedLines = (outcome: SeedOutcome, runArgs: ReadonlyArray<string>): Array<string> => [
  `seed ${String(outcome.seed).padStart(4)}  steps ${String(outcome.steps ?? "?").padStart(5)}  requests ${String(outcome.requests ?? "?").padStart(5)}  trace ${outcome.trace ?? "?".padEnd(16)}  ${outcome.seconds.toFixed(1).padStart(6)} s  ${outcome.ok ? "pass" : "FAIL"}`,
  ...(outcome.ok
    ? []
    : [...outcome.broken.map((line) => `    ${line}`), `    replay: ${replayCommand(outcome.seed, runArgs)}`])
]

/** The summary: how many seeds passed and failed, their requests, the wall time, and the failing seeds. */
export const summaryLine = (
  outcomes: ReadonlyArray<SeedOutcome>,
  jobs: number,
  wallSeconds: number
): string => {
  const failed = outcomes.filter((outcome) => !outcome.ok)
  const requests = outcomes.reduce((sum, outcome) => sum + (outcome.requests ?? 0), 0)
  const seeds = [...outcomes].sort((a, b) => a.seed - b.seed)
  const range = seeds.length === 0 ? "none" : `${seeds[0]!.seed}..${seeds.at(-1)!.seed}`
  return `seeds ${range}: ${outcomes.length} run, ${outcomes.length - failed.length} passed, ${failed.length} failed${
    failed.length > 0 ? ` (${failed.map((outcome) => outcome.seed).join(", ")})` : ""
  }; ${requests} requests in ${wallSeconds.toFixed(1)} s with ${jobs} jobs`
}

const mainFile = resolve(import.meta.dirname, "main.ts")

/** Runs one seed in a child process of the same node; its output and exit code. */
const runChild = (seed: number, runArgs: ReadonlyArray<string>) =>
  new Promise<SeedOutcome>((done) => {
    const started = performance.now()
    const args = [mainFile, ...runArgs, "--seed", String(seed)]
    if (!runArgs.includes("--no-shrink")) args.push("--no-shrink")
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("error", (error) => (output += `\n${error.message}`))
    child.on("close", (code) => done(outcomeOf(seed, output, code, (performance.now() - started) / 1000)))
  })

/** Runs the seeds, at most `jobs` at once; prints each seed's lines as it ends, then the summary. */
export const runSeeds = async (
  args: SeedsArgs,
  print: (line: string) => void = (line) => console.log(line)
): Promise<{ readonly outcomes: ReadonlyArray<SeedOutcome>; readonly ok: boolean }> => {
  const started = performance.now()
  const elapsed = () => (performance.now() - started) / 1000
  const outcomes: Array<SeedOutcome> = []
  let next = args.from
  const more = () =>
    (args.to === undefined || next <= args.to) && (args.budget === undefined || elapsed() < args.budget)
  const worker = async () => {
    while (more()) {
      const seed = next++
      const outcome = await runChild(seed, args.runArgs)
      outcomes.push(outcome)
      for (const line of seedLines(outcome, args.runArgs)) print(line)
    }
  }
  await Promise.all(Array.from({ length: args.jobs }, worker))
  print(summaryLine(outcomes, args.jobs, elapsed()))
  return { outcomes, ok: outcomes.length > 0 && outcomes.every((outcome) => outcome.ok) }
}
