import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { type Admin, adminOf } from "./accounts.ts"
import type { AllocationWindow } from "./allocation-probe.ts"
import { benchDir, freePort, repoRoot, type Started, serviceEnv, startNode } from "./proc.ts"
import { serviceSeed } from "./world.ts"

export type Store = "pglite" | "postgres"

export interface Service extends Started {
  readonly store: Store
  readonly admin: Admin
  readonly adminToken: string
  /** The bearer of its `/metrics` (METRICS_TOKEN: the admin token no longer opens it). */
  readonly metricsToken: string
  /** With `measureAllocation`: a window of the service's allocation (`bench/allocation-probe.ts`). */
  readonly allocation?: Allocation | undefined
}

/** Opens a window of the service's allocation; `end` closes it and reads it (undefined if it cannot). */
export interface Allocation {
  readonly begin: () => void
  readonly end: () => Promise<AllocationWindow | undefined>
}

const probe = join(repoRoot, "bench", "allocation-probe.ts")

/** The probe's window through SIGUSR2 and the file it writes. */
const allocationOf = (started: Started, file: string): Allocation => ({
  begin: () => {
    rmSync(file, { force: true })
    started.signal("SIGUSR2")
  },
  end: async () => {
    started.signal("SIGUSR2")
    for (let waited = 0; waited < 5000; waited += 20) {
      if (existsSync(file)) {
        const window = JSON.parse(readFileSync(file, "utf8")) as AllocationWindow
        rmSync(file, { force: true })
        return window
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return undefined
  }
})

/**
 * What `npm start` sets in a checkout (`"start": "[NAME=value ...] node <flags> src/main.ts"`): its
 * environment and Node's flags, so that the bench measures the service as `npm start` runs it, and
 * a checkout compared with `--against` as its own `npm start` runs it.
 */
export const startCommand = (
  checkout: string
): { readonly env: Readonly<Record<string, string>>; readonly flags: ReadonlyArray<string> } => {
  const start: unknown = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")).scripts?.start
  const words = typeof start === "string" ? start.trim().split(/\s+/) : []
  const env: Record<string, string> = {}
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(words[0]!)) {
    const [name, ...value] = words.shift()!.split("=")
    env[name!] = value.join("=")
  }
  if (words[0] !== "node" || words.at(-1) !== "src/main.ts") {
    throw new Error(
      `${checkout}: npm start is not \`[NAME=value ...] node [flags] src/main.ts\`: ${String(start)}`
    )
  }
  return { env, flags: words.slice(1, -1) }
}

/**
 * `npm start`'s `node [flags] src/main.ts` on a free port and core 0: PGlite in a directory of its own, or PostgreSQL at `databaseUrl`.
 * Loopback is a trusted proxy, so X-Forwarded-For gives every minted key its own client IP.
 */
export const startService = async (options: {
  readonly label: string
  readonly store: Store
  readonly databaseUrl?: string | undefined
  readonly nodeFlags?: ReadonlyArray<string>
  readonly env?: Record<string, string>
  /** A given port and admin token (several instances of one database share a token); free and fresh otherwise. */
  readonly port?: number
  readonly adminToken?: string
  /** `false`: not pinned to core 0 (several instances share the cores). */
  readonly pin?: boolean
  /** A copy of the service to run instead of the repository's own `src/`. */
  readonly cwd?: string
  /**
   * PGlite's directory. Unset: a fresh one under `.bench/`, removed when the service stops (on disk,
   * as `npm start` keeps it; in memory the whole ledger would sit in the service's RSS).
   */
  readonly dataDir?: string
  /** How often /readyz is polled while it starts (see `startNode`). */
  readonly pollMs?: number
  /**
   * Imports `bench/allocation-probe.ts` (no V8 flag; a GC observer inside a window) so that
   * `allocation` can measure bytes allocated per request.
   */
  readonly measureAllocation?: boolean
}): Promise<Service> => {
  if (options.store === "postgres" && options.databaseUrl === undefined) {
    throw new Error("the PostgreSQL store needs a database URL")
  }
  const port = options.port ?? (await freePort())
  const adminToken = options.adminToken ?? randomBytes(24).toString("hex")
  const metricsToken = randomBytes(24).toString("hex")
  mkdirSync(benchDir, { recursive: true })
  // Where the probe writes each window, when it is imported.
  const allocationFile =
    options.measureAllocation === true
      ? join(benchDir, `allocation-${port}-${randomBytes(4).toString("hex")}.json`)
      : undefined
  let ownDir: string | undefined
  if (options.store === "pglite" && options.dataDir === undefined) {
    ownDir = mkdtempSync(join(benchDir, "pglite-"))
  }
  const removeOwnDir = () => {
    if (ownDir !== undefined) rmSync(ownDir, { recursive: true, force: true })
  }
  const command = startCommand(options.cwd ?? repoRoot)
  const starting = startNode({
    label: options.label,
    ...(options.pin === undefined ? {} : { pin: options.pin }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    args: [
      ...command.flags,
      ...(options.nodeFlags ?? []),
      ...(allocationFile === undefined ? [] : ["--import", probe]),
      "src/main.ts"
    ],
    port,
    readyPath: "/readyz",
    env: serviceEnv({
      ...command.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: options.dataDir ?? ownDir ?? ":memory:",
      ADMIN_TOKEN: adminToken,
      METRICS_TOKEN: metricsToken,
      TRUSTED_PROXIES: "127.0.0.1,::1",
      WORLD_SEED: serviceSeed,
      // No load balancer watches a bench's instances: a stop need not wait for one to notice.
      SHUTDOWN_DRAIN_SECONDS: "0",
      ...(allocationFile === undefined ? {} : { BENCH_ALLOCATION_FILE: allocationFile }),
      ...(options.store === "postgres" ? { DATABASE_URL: options.databaseUrl } : {}),
      ...options.env
    })
  })
  const started = await starting.catch((error: unknown) => {
    removeOwnDir()
    throw error
  })
  const admin = adminOf(started.url, adminToken)
  return {
    ...started,
    store: options.store,
    admin,
    adminToken,
    metricsToken,
    ...(allocationFile === undefined ? {} : { allocation: allocationOf(started, allocationFile) }),
    stop: async () => {
      await admin.close()
      await started.stop()
      removeOwnDir()
    }
  }
}

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** One request with a bearer key (and an Idempotency-Key when given). */
export const call = async (
  baseUrl: string,
  path: string,
  options: {
    readonly key?: string | undefined
    readonly idempotencyKey?: string | undefined
    readonly ip?: string | undefined
    readonly signal?: AbortSignal | undefined
  } = {}
): Promise<Reply> => {
  const headers: Record<string, string> = {}
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
  if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey
  if (options.ip !== undefined) headers["x-forwarded-for"] = options.ip
  const response = await fetch(`${baseUrl}${path}`, {
    headers,
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: response.status, headers: response.headers, body }
}

export const expectStatus = (what: string, reply: Reply, status: number): Reply => {
  if (reply.status !== status) {
    throw new Error(
      `${what}: expected ${status}, got ${reply.status} ${JSON.stringify(reply.body).slice(0, 400)}`
    )
  }
  return reply
}
