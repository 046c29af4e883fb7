/**
 * `npm run sim -- --seed N [--ops N] [--instances K] [--clients N] [--faults LIST] [--mutate NAME]
 * [--pg URL] [--verbose] [--no-shrink]`, `--list-mutations`, and many seeds in child processes:
 * `--jobs N --seeds A..B [--budget S]` with the same run options (see `seeds.ts`). See the README's
 * "Simulating" and docs/simulation.md.
 */
import { Effect } from "effect"
import { mutationOps, mutations } from "./mutations.ts"
import { makeRng } from "./random.ts"
import { faultKinds, makeSchedule, type Step, showStep } from "./schedule.ts"
import { parseSeedRange, runSeeds, type SeedsArgs } from "./seeds.ts"
import { shrink } from "./shrink.ts"
import { type RunOptions, runSchedule } from "./simulation.ts"

export interface SimArgs {
  readonly seed: string
  readonly ops: number
  readonly instances: number
  readonly clients: number
  readonly faults: ReadonlySet<string>
  readonly mutation: string | undefined
  readonly pgUrl: string | undefined
  readonly verbose: boolean
  readonly shrink: boolean
}

export const defaults: SimArgs = {
  seed: "1",
  ops: 700,
  instances: 3,
  clients: 12,
  faults: new Set(faultKinds),
  mutation: undefined,
  pgUrl: undefined,
  verbose: false,
  shrink: true
}

/**
 * A run's schedule: enough steps for about `ops` requests (a step sends 1.1 on average: most one,
 * the faults and the account steps several, the clock and fault settings none). The steps are
 * drawn from the seed alone, so the same arguments give the same schedule.
 */
export const scheduleOf = (args: SimArgs): Array<Step> =>
  makeSchedule(makeRng(`${args.seed}/schedule`), {
    steps: Math.max(1, Math.round(args.ops / 1.1)),
    instances: args.instances,
    clients: args.clients,
    faults: args.faults
  })

const runOptions = (args: SimArgs): RunOptions => ({
  seed: args.seed,
  instances: args.instances,
  clients: args.clients,
  mutation: args.mutation,
  pgUrl: args.pgUrl,
  verbose: args.verbose
})

/** Runs a seed; on a failure, shrinks its schedule. The report's lines, and whether it passed. */
export const simulate = (args: SimArgs) =>
  Effect.gen(function* () {
    const schedule = scheduleOf(args)
    const started = performance.now()
    const result = yield* runSchedule(schedule, runOptions(args))
    const seconds = (performance.now() - started) / 1000
    const lines: Array<string> = []
    if (!result.ok && result.failure !== undefined) {
      lines.push(
        `FAILED at step ${result.failure.step} of seed ${args.seed}${args.mutation === undefined ? "" : ` (mutation ${args.mutation})`}:`
      )
      for (const violation of result.failure.violations)
        lines.push(`  invariant broken: ${violation.invariant}: ${violation.detail}`)
      lines.push("  the last events:")
      for (const line of result.log.slice(-8)) lines.push(`    ${line}`)
      if (args.shrink) {
        const shrunk = yield* shrink(schedule, result.failure.step, (steps) =>
          Effect.map(runSchedule(steps, runOptions(args)), (run) => !run.ok)
        )
        lines.push(
          `  shortest failing schedule found (${shrunk.steps.length} of ${schedule.length} steps, ${shrunk.runs} runs to find it):`
        )
        for (const step of shrunk.steps) lines.push(`    ${showStep(step)}`)
      }
    }
    const phases = Object.values(result.spent).reduce((sum, ms) => sum + ms, 0)
    lines.push(
      `time: ${Object.entries(result.spent)
        .map(([phase, ms]) => `${phase} ${(ms / 1000).toFixed(1)} s`)
        .join(", ")}, set-up ${(seconds - phases / 1000).toFixed(1)} s`
    )
    const counted = Object.entries(result.counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, n]) => `${name.replace(/ /g, "_")}=${n}`)
      .join(" ")
    lines.push(
      `sim seed=${args.seed} ops=${result.ops} steps=${result.steps} instances=${args.instances} clients=${args.clients} store=${args.pgUrl === undefined ? "pglite" : "postgres"} faults=${[...args.faults].join(",") || "none"}${args.mutation === undefined ? "" : ` mutation=${args.mutation}`} ${counted} result=${result.ok ? "ok" : "FAILED"} seconds=${seconds.toFixed(1)} ops/s=${Math.round(result.ops / seconds)} trace=${result.trace}`
    )
    return { ok: result.ok, lines, result }
  })

/**
 * The command line: one seed's run, `"list"` (`--list-mutations`), or many seeds (`--seeds`; their
 * `runArgs` are the arguments less `--jobs`, `--seeds` and `--budget`, checked as one seed's).
 */
export const parse = (argv: ReadonlyArray<string>): SimArgs | "list" | SeedsArgs => {
  let args = { ...defaults }
  let jobs: number | undefined
  let seeds: ReturnType<typeof parseSeedRange> | undefined
  let budget: number | undefined
  let seedGiven = false
  const runArgs: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const start = i
    const flag = argv[i]!
    const value = () => {
      const next = argv[++i]
      if (next === undefined) throw new Error(`${flag} needs a value`)
      return next
    }
    const count = () => {
      const n = Number(value())
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer`)
      return n
    }
    switch (flag) {
      case "--list-mutations":
        return "list"
      case "--seed":
        args = { ...args, seed: value() }
        seedGiven = true
        continue
      case "--jobs":
        jobs = count()
        continue
      case "--seeds":
        seeds = parseSeedRange(value())
        continue
      case "--budget":
        budget = count()
        continue
      case "--ops":
        args = { ...args, ops: count() }
        break
      case "--instances":
        args = { ...args, instances: count() }
        break
      case "--clients":
        args = { ...args, clients: count() }
        break
      case "--faults": {
        const list = value()
          .split(",")
          .map((fault) => fault.trim())
          .filter((fault) => fault !== "" && fault !== "none")
        const unknown = list.filter((fault) => !(faultKinds as ReadonlyArray<string>).includes(fault))
        if (unknown.length > 0)
          throw new Error(`unknown faults ${unknown.join(", ")}; known: ${faultKinds.join(", ")}`)
        args = { ...args, faults: new Set(list) }
        break
      }
      case "--mutate": {
        const name = value()
        if (!mutations.some((mutation) => mutation.name === name))
          throw new Error(`no mutation ${name}; --list-mutations lists them`)
        args = { ...args, mutation: name }
        break
      }
      case "--pg":
        args = { ...args, pgUrl: value() }
        break
      case "--verbose":
        args = { ...args, verbose: true }
        break
      case "--no-shrink":
        args = { ...args, shrink: false }
        break
      default:
        throw new Error(`unknown argument ${flag}`)
    }
    runArgs.push(...argv.slice(start, i + 1))
  }
  if (seeds === undefined) {
    if (jobs !== undefined || budget !== undefined)
      throw new Error("--jobs and --budget go with --seeds A..B")
    return args
  }
  if (seedGiven) throw new Error("--seed and --seeds do not go together: --seeds A..B runs seeds A to B")
  if (seeds.to === undefined && budget === undefined)
    throw new Error("--seeds A.. (no last seed) needs --budget S")
  return { jobs: jobs ?? 1, from: seeds.from, to: seeds.to, budget, runArgs }
}

if (import.meta.main) {
  let parsed: SimArgs | "list" | SeedsArgs
  try {
    parsed = parse(process.argv.slice(2))
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error))
    process.exit(2)
  }
  if (parsed === "list") {
    // One line each: the name and the requests of seed 1 that catch it (CI reads both).
    for (const mutation of mutations) console.log(`${mutation.name} ${mutationOps(mutation)}`)
    process.exit(0)
  }
  if ("jobs" in parsed) {
    const many = await runSeeds(parsed)
    process.exit(many.ok ? 0 : 1)
  }
  const outcome = await Effect.runPromise(simulate(parsed))
  for (const line of outcome.lines) console.log(line)
  process.exit(outcome.ok ? 0 : 1)
}
