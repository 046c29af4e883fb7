import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { AdminClient } from "../../src/clients/operator-cli/AdminClient.ts"
import type { Faults } from "../../src/upstream/Upstream.ts"

/** `node src/main.ts` through the pinned Node, as an operator starts it. */
const node = join(import.meta.dirname, "../../node_modules/.bin/node")
const main = join(import.meta.dirname, "../../src/main.ts")

export const adminToken = "ops-test-admin-token-5e9b2c7f1a4d8e3b6c"

export interface Service {
  readonly child: ChildProcess
  readonly port: number
  readonly base: string
  readonly output: () => string
  readonly waitFor: (pattern: RegExp) => Promise<string>
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly stop: () => void
}

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/**
 * The service in a process of its own: on PostgreSQL when `TEST_DATABASE_URL` is set, else on
 * PGlite in a temporary directory; resolves once it listens.
 */
export const startService = async (
  env: Record<string, string> = {},
  options: { readonly dir?: string; readonly waitForListening?: boolean } = {}
): Promise<Service> => {
  const port = await freePort()
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "svc-ops-"))
  const database = process.env.TEST_DATABASE_URL
  const child = spawn(node, [main], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      TMPDIR: tmpdir(),
      PORT: String(port),
      DATA_DIR: dir,
      ADMIN_TOKEN: adminToken,
      ...(database === undefined ? {} : { DATABASE_URL: database }),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const listeners = new Set<() => void>()
  const append = (chunk: Buffer) => {
    output += chunk.toString()
    for (const listener of listeners) listener()
  }
  child.stdout?.on("data", append)
  child.stderr?.on("data", append)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      if (options.dir === undefined) rmSync(dir, { recursive: true, force: true })
      resolve({ code, signal })
    })
  )
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output)) resolve(output)
      }
      listeners.add(check)
      check()
      void exited.then(({ code }) => {
        check()
        reject(new Error(`exited ${code} before ${pattern}:\n${output}`))
      })
    })
  const service: Service = {
    child,
    port,
    base: `http://127.0.0.1:${port}`,
    output: () => output,
    waitFor,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    }
  }
  if (options.waitForListening !== false) await waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/)
  return service
}

/** A fresh trial key of the service, and its account. */
export const mintKey = async (base: string): Promise<{ readonly key: string; readonly account: string }> => {
  const reply = await fetch(`${base}/v1/keys/mint`, { method: "POST" })
  if (reply.status !== 200) throw new Error(`mint answered ${reply.status}: ${await reply.text()}`)
  const { key, account_id } = (await reply.json()) as { key: string; account_id: string }
  return { key, account: account_id }
}

/** Rows of a query on the service's store once it has stopped: PostgreSQL through psql, or its PGlite directory. */
export const queryStore = async (
  dir: string,
  query: string
): Promise<ReadonlyArray<Record<string, unknown>>> => {
  const database = process.env.TEST_DATABASE_URL
  if (database !== undefined) {
    const { execFileSync } = await import("node:child_process")
    const json = execFileSync("psql", [
      database,
      "-Atc",
      `SELECT coalesce(json_agg(q), '[]') FROM (${query}) q`
    ])
    return JSON.parse(json.toString()) as ReadonlyArray<Record<string, unknown>>
  }
  const { PGlite } = await import("@electric-sql/pglite")
  const db = await PGlite.create(dir)
  try {
    return (await db.query<Record<string, unknown>>(query)).rows
  } finally {
    await db.close()
  }
}

const withAdmin = <A, E>(base: string, f: (admin: AdminClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      return yield* f(yield* AdminClient)
    }).pipe(Effect.provide(AdminClient.layerFor(base, adminToken)))
  )

/** Sets the simulated world's fault knobs through the operator RPC. */
export const setUpstream = (base: string, patch: Partial<Faults>) =>
  withAdmin(base, (admin) => admin.upstream(patch))

/**
 * A fresh production key with credits on its balance: it may ask for `freshness=realtime`, which
 * always fetches live, whatever copies a shared test database already holds.
 */
export const paidKey = async (base: string) => {
  const minted = await mintKey(base)
  await withAdmin(base, (admin) =>
    Effect.andThen(
      admin.plan({ accountId: minted.account, plan: "production" }),
      admin.credit({ accountId: minted.account, credits: 10_000, kind: "balance", reason: "ops test" })
    )
  )
  return minted
}

/** A live data call (realtime: never served from a copy) with an Idempotency-Key. */
export const liveCall = (base: string, key: string, idempotencyKey: string) =>
  fetch(`${base}/v1/profnet/profiles?identifier=richard-lewis-07kvcfn&freshness=realtime`, {
    headers: { authorization: `Bearer ${key}`, "idempotency-key": idempotencyKey }
  })
