import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { appendFileSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"

export const repoRoot = new URL("..", import.meta.url).pathname
export const benchDir = join(repoRoot, ".bench")

const onPath = (command: string): boolean => {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

export const has = { taskset: onPath("taskset"), wrk: onPath("wrk"), pgbench: onPath("pgbench") }

/** The server gets core 0, the load generator core 1, when `taskset` exists. */
export const pinned = (core: number, command: string, args: ReadonlyArray<string>) =>
  has.taskset
    ? { command: "taskset", args: ["-c", String(core), command, ...args] }
    : { command, args: [...args] }

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const running = new Set<ChildProcess>()

/** Whatever the bench started dies with it, even on Ctrl-C. */
export const killAll = () => {
  for (const child of running) child.kill("SIGKILL")
  running.clear()
}
process.once("exit", killAll)

export interface Started {
  readonly pid: number
  /** `performance.now()` when it was spawned. */
  readonly spawnedAt: number
  /** `performance.now()` at the first 200 from its ready path. */
  readonly readyAt: number
  readonly url: string
  readonly logFile: string
  /** Peak and current resident set size of the process, in MiB. */
  readonly memory: () => { readonly peakMb: number; readonly rssMb: number } | undefined
  /** The CPU time (user and system) the process has used so far, in microseconds. */
  readonly cpuUs: () => number | undefined
  readonly stop: () => Promise<void>
  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT, ...) to the process. */
  readonly signal: (signal: NodeJS.Signals) => void
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  /** Its exit code once it exited of itself (null while it runs, or when a signal ended it). */
  readonly exitCode: () => number | null
}

export const statusKb = (pid: number, field: string): number | undefined => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

/**
 * A process's name and its utime + stime in microseconds, from the text of its `/proc/<pid>/stat`
 * (fields 14 and 15, in clock ticks of 10 ms; the name is between the first "(" and the last ")",
 * since it may hold either).
 */
export const parseStat = (stat: string): { readonly name: string; readonly cpuUs: number } => {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return {
    name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    cpuUs: (Number(fields[11]) + Number(fields[12])) * 10_000
  }
}

const cpuUsOf = (pid: number): number | undefined => {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, "utf8")).cpuUs
  } catch {
    return undefined
  }
}

/**
 * The CPU time (user and system, in microseconds) of each PostgreSQL process this machine shows, by
 * pid: the server, every backend and background worker (each named `postgres`). Empty when none is
 * visible.
 */
export const postgresCpu = (): ReadonlyMap<number, number> => {
  const readings = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const { name, cpuUs } = parseStat(readFileSync(`/proc/${entry}/stat`, "utf8"))
      if (name === "postgres") readings.set(Number(entry), cpuUs)
    } catch {
      // It ended between the listing and the read.
    }
  }
  return readings
}

/**
 * PostgreSQL's CPU microseconds per request between two readings of `postgresCpu`: a process that
 * started in between counts whole, one that ended in between is missed (its last ticks with it).
 * Undefined when no PostgreSQL process was seen or nothing was answered.
 */
export const postgresCpuUsBetween = (
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
  requests: number
): number | undefined => {
  if (before.size === 0 || after.size === 0 || requests === 0) return undefined
  let used = 0
  for (const [pid, cpuUs] of after) {
    const earlier = before.get(pid) ?? 0
    // A smaller reading is another process under a reused pid: all of its time is new.
    used += cpuUs >= earlier ? cpuUs - earlier : cpuUs
  }
  return used / requests
}

/** Whether a PostgreSQL URL names a server on this machine, whose processes `postgresCpu` can read. */
export const isLocalServer = (url: string | undefined): boolean => {
  if (url === undefined) return false
  try {
    const host = new URL(url).hostname
    return host === "" || host === "localhost" || host === "127.0.0.1" || host === "[::1]"
  } catch {
    return false
  }
}

/** CPU microseconds per request between two readings of `cpuUs`; undefined when either failed or nothing was answered. */
export const cpuUsBetween = (before: number | undefined, after: number | undefined, requests: number) =>
  before === undefined || after === undefined || requests === 0 ? undefined : (after - before) / requests

/** Polls `url` every `pollMs` until it answers 200; resolves with `performance.now()` at that answer. */
export const waitFor = async (
  url: string,
  child: ChildProcess,
  timeoutMs: number,
  logFile: string,
  pollMs = 200
): Promise<number> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${url}: the process exited (${child.exitCode ?? child.signalCode}); see ${logFile}`)
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
      if (response.ok) return performance.now()
    } catch {}
    await sleep(pollMs)
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s; see ${logFile}`)
}

/**
 * Starts `node <args>` on core 0 (any core with `pin: false`) with its output in
 * `.bench/logs/<label>.log`, and waits for `readyPath`.
 */
export const startNode = async (options: {
  readonly label: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string | undefined>
  readonly port: number
  readonly readyPath: string
  readonly timeoutMs?: number
  /** How often the ready path is polled (default 200 ms; finer to time a start-up). */
  readonly pollMs?: number
  readonly pin?: boolean
  /** Where `args` are resolved (default: the repository). */
  readonly cwd?: string
}): Promise<Started> => {
  mkdirSync(join(benchDir, "logs"), { recursive: true })
  const logFile = join(benchDir, "logs", `${options.label}.log`)
  const out = openSync(logFile, "w")
  const { command, args } =
    options.pin === false
      ? { command: process.execPath, args: [...options.args] }
      : pinned(0, process.execPath, options.args)
  const spawnedAt = performance.now()
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: options.env,
    stdio: ["ignore", out, out]
  })
  running.add(child)
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      appendFileSync(logFile, `\n[bench] ${options.label} exited: code ${code}, signal ${signal}\n`)
      resolve()
    })
  )
  const url = `http://127.0.0.1:${options.port}`
  const pid = child.pid ?? 0
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const killed = await Promise.race([exited.then(() => false), sleep(15_000).then(() => true)])
      if (killed) {
        child.kill("SIGKILL")
        await exited
      }
    }
    running.delete(child)
  }
  let readyAt: number
  try {
    readyAt = await waitFor(
      `${url}${options.readyPath}`,
      child,
      options.timeoutMs ?? 180_000,
      logFile,
      options.pollMs
    )
  } catch (error) {
    await stop()
    throw error
  }
  return {
    pid,
    spawnedAt,
    readyAt,
    url,
    logFile,
    memory: () => {
      const peak = statusKb(pid, "VmHWM")
      const rss = statusKb(pid, "VmRSS")
      return peak === undefined || rss === undefined ? undefined : { peakMb: peak / 1024, rssMb: rss / 1024 }
    },
    cpuUs: () => cpuUsOf(pid),
    stop,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    exited,
    exitCode: () => child.exitCode
  }
}

/** The environment of a child service: ours, less anything that would point it elsewhere. */
export const serviceEnv = (
  overrides: Record<string, string | undefined>
): Record<string, string | undefined> => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const name of Object.keys(env)) {
    if (
      name.startsWith("UPSTREAM_") ||
      [
        "DATABASE_URL",
        "REDIS_URL",
        "PORT",
        "HOST",
        "BASE_URL",
        "DATA_DIR",
        "ADMIN_TOKEN",
        "METRICS_TOKEN"
      ].includes(name) ||
      name === "TRUSTED_PROXIES" ||
      name === "NODE_OPTIONS"
    ) {
      delete env[name]
    }
  }
  return { ...env, ...overrides }
}
