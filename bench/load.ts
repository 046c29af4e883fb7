import { execFile } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import type { RunnerSpec } from "./entries.ts"
import type { LoopDelay } from "./loopDelay.ts"
import { benchDir, pinned, repoRoot } from "./proc.ts"

/** One prepared request; `{{IDEM}}` in a header value or the body becomes a fresh key per request. */
export interface Entry {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
}

export interface LoadSpec {
  readonly label: string
  readonly baseUrl: string
  readonly method: "GET" | "POST"
  /** Rotated over, one per request. */
  readonly entries: ReadonlyArray<Entry>
  readonly duration: number
  readonly connections: number
  readonly tool: "wrk" | "autocannon"
  /** Count responses by status (wrk then parses every response; see bench/wrk/rotate.lua). */
  readonly countStatuses: boolean
  /**
   * A fixed rate, in requests per second, instead of as fast as the service answers: an open loop
   * (`bench/rate-runner.ts`, as wrk2 does) that times each request from when it was due. Neither
   * wrk nor autocannon can (autocannon's rate sends each second's requests in one burst).
   */
  readonly rate?: number | undefined
  /** With `rate`: seconds of the same load first, on the same connections, not measured. */
  readonly warmup?: number | undefined
}

export interface LoadResult {
  readonly tool: "wrk" | "autocannon" | "fixed rate"
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** Responses by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>
  /** Connect, read, write errors and timeouts. */
  readonly socketErrors: number
  /**
   * How late the fixed-rate runner's own event loop turned: a late turn sends late or reads late,
   * and counts in the latency of every request it held up.
   */
  readonly runnerDelay?: LoopDelay | undefined
}

/** What the runners print: one line `BENCH_JSON {...}` in this shape. */
export interface RawResult {
  readonly requests: number
  readonly duration_us: number
  readonly errors: Readonly<Record<string, number>>
  readonly latency_us: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly statuses: Readonly<Record<string, number>>
  /** The fixed-rate runner's own event loop lateness. */
  readonly runner_delay?: LoopDelay
}

const run = promisify(execFile)

const clean = (text: string) => {
  if (["\t", "\n", "\r", "\x1e"].some((c) => text.includes(c)))
    throw new Error(`a prepared request may not contain tabs or newlines: ${text}`)
  return text
}

const writeEntries = (spec: LoadSpec): string => {
  const dir = join(benchDir, "tmp")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${spec.label}.tsv`)
  const lines = spec.entries.map((entry) =>
    [
      clean(entry.path),
      Object.entries(entry.headers)
        .map(([name, value]) => `${clean(name)}: ${clean(value)}`)
        .join("\x1e"),
      clean(entry.body ?? "")
    ].join("\t")
  )
  writeFileSync(file, `${lines.join("\n")}\n`)
  return file
}

const parseRaw = (stdout: string): RawResult => {
  const line = stdout.split("\n").find((text) => text.startsWith("BENCH_JSON "))
  if (line === undefined) throw new Error(`the load generator printed no result:\n${stdout}`)
  return JSON.parse(line.slice("BENCH_JSON ".length)) as RawResult
}

const toResult = (tool: LoadResult["tool"], raw: RawResult): LoadResult => {
  const seconds = raw.duration_us / 1e6
  const { status: _status, ...socket } = raw.errors
  return {
    tool,
    requests: raw.requests,
    seconds,
    rps: raw.requests / seconds,
    p50Ms: raw.latency_us.p50 / 1000,
    p99Ms: raw.latency_us.p99 / 1000,
    maxMs: raw.latency_us.max / 1000,
    statuses: raw.statuses,
    socketErrors: Object.values(socket).reduce((sum, n) => sum + n, 0),
    ...(raw.runner_delay === undefined ? {} : { runnerDelay: raw.runner_delay })
  }
}

const runnerSpec = (spec: LoadSpec, file: string): RunnerSpec => ({
  url: spec.baseUrl,
  method: spec.method,
  file,
  duration: spec.duration,
  connections: spec.connections
})

/** One of our Node load generators (`bench/<script>`) on core 1; its standard output. */
const runRunner = async (
  script: string,
  spec: RunnerSpec & { readonly rate?: number; readonly warmup?: number },
  timeout: number
) => {
  const { command, args } = pinned(1, process.execPath, [
    join(repoRoot, "bench", script),
    JSON.stringify(spec)
  ])
  const { stdout } = await run(command, args, { timeout, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

/**
 * Every request a load sent: at a fixed rate its warm-up's too (the same load, not measured), which
 * a figure counted over the whole run (CPU, bytes) is divided by.
 */
export const requestsSent = (load: LoadResult, rate: number | undefined, warmup: number): number =>
  load.requests + (rate === undefined ? 0 : Math.round(rate * warmup))

/** Runs the load on core 1 for `spec.duration` seconds. */
export const runLoad = async (spec: LoadSpec): Promise<LoadResult> => {
  if (spec.entries.length === 0) throw new Error(`${spec.label}: no requests to send`)
  const file = writeEntries(spec)
  const timeout = (spec.duration + 60) * 1000
  if (spec.rate !== undefined) {
    const stdout = await runRunner(
      "rate-runner.ts",
      { ...runnerSpec(spec, file), rate: spec.rate, warmup: spec.warmup ?? 0 },
      timeout + (spec.warmup ?? 0) * 1000
    )
    return toResult("fixed rate", parseRaw(stdout))
  }
  if (spec.tool === "wrk") {
    const script = join(repoRoot, "bench", "wrk", "rotate.lua")
    const { command, args } = pinned(1, "wrk", [
      "-t1",
      `-c${spec.connections}`,
      `-d${spec.duration}s`,
      "--timeout",
      "10s",
      "--latency",
      "-s",
      script,
      spec.baseUrl,
      "--",
      file,
      spec.method
    ])
    const env = { ...process.env, BENCH_COUNT_STATUSES: spec.countStatuses ? "1" : "0" }
    const { stdout } = await run(command, args, { timeout, env, maxBuffer: 16 * 1024 * 1024 })
    return toResult("wrk", parseRaw(stdout))
  }
  const stdout = await runRunner("autocannon-runner.ts", runnerSpec(spec, file), timeout)
  return toResult("autocannon", parseRaw(stdout))
}
