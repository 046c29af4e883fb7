import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, assert, describe, it } from "vitest"
import { liveCall, paidKey, queryStore, type Service, setUpstream, startService } from "./service.ts"

const store = process.env.TEST_DATABASE_URL === undefined ? "PGlite" : "PostgreSQL"
const started: Array<Service> = []
const servers: Array<Server> = []

/** A TCP server that accepts connections and never answers; resolves with its port and the first connection. */
const silentServer = () =>
  new Promise<{ readonly port: number; readonly connected: Promise<void> }>((resolve) => {
    let connection: () => void = () => undefined
    const connected = new Promise<void>((done) => {
      connection = done
    })
    const server = createServer(() => connection())
    servers.push(server)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve({ port: typeof address === "object" && address !== null ? address.port : 0, connected })
    })
  })
const start = async (...args: Parameters<typeof startService>) => {
  const service = await startService(...args)
  started.push(service)
  return service
}
afterEach(() => {
  for (const service of started.splice(0)) service.stop()
  for (const server of servers.splice(0)) server.close()
})

const within = <A>(promise: Promise<A>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms}ms`)), ms))
  ])

describe(`graceful shutdown of node src/main.ts (${store})`, { timeout: 120_000 }, () => {
  it("on SIGTERM: readyz 503 and healthz 200 while draining, calls in flight finish and charge, exit 0", async () => {
    const service = await start({ SHUTDOWN_DRAIN_SECONDS: "2" })
    const [a, b] = await Promise.all([paidKey(service.base), paidKey(service.base)])
    await setUpstream(service.base, { latencyMs: { min: 3500, max: 3500 } })
    const calls = [
      liveCall(service.base, a!.key, `drain-a-${Date.now()}`),
      liveCall(service.base, b!.key, `drain-b-${Date.now()}`)
    ]
    await new Promise((resolve) => setTimeout(resolve, 500))
    const signalled = Date.now()
    service.child.kill("SIGTERM")
    await service.waitFor(/SIGTERM: draining/)
    const ready = await fetch(`${service.base}/readyz`)
    assert.strictEqual(ready.status, 503)
    assert.deepStrictEqual(await ready.json(), { status: "draining" })
    assert.strictEqual(ready.headers.get("connection"), "close", "draining answers close their connection")
    const health = await fetch(`${service.base}/healthz`)
    assert.strictEqual(health.status, 200)
    // The listener still serves new requests during the drain.
    assert.strictEqual((await fetch(`${service.base}/v1/openapi.json`)).status, 200)

    const answers = await Promise.all(calls)
    for (const answer of answers) {
      assert.strictEqual(answer.status, 200, await answer.clone().text())
      assert.isNotNull(answer.headers.get("x-receipt-id"))
      assert.strictEqual(Number(answer.headers.get("x-credits-charged")) > 0, true)
    }
    const exit = await within(service.exited, 15_000, "the exit")
    assert.deepStrictEqual(exit, { code: 0, signal: null })
    assert.isAtLeast(Date.now() - signalled, 2000, "the listener stayed open for the drain")
    // After the drain the listener is closed.
    await fetch(`${service.base}/healthz`).then(
      () => assert.fail("the listener is closed after the drain"),
      () => undefined
    )
    assert.match(service.output(), /closing the listener/)
  })

  it("a call still in flight after the grace is stopped: released, fenced, charged nothing; exit 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-ops-grace-"))
    try {
      const service = await start({ SHUTDOWN_DRAIN_SECONDS: "0.5", SHUTDOWN_GRACE_SECONDS: "1" }, { dir })
      const { key, account } = await paidKey(service.base)
      await setUpstream(service.base, { latencyMs: { min: 20_000, max: 20_000 } })
      const call = liveCall(service.base, key, `grace-${Date.now()}`).then(
        (answer) => answer.status,
        () => "connection closed"
      )
      await new Promise((resolve) => setTimeout(resolve, 800))
      service.child.kill("SIGTERM")
      const exit = await within(service.exited, 15_000, "the exit")
      assert.deepStrictEqual(exit, { code: 0, signal: null })
      assert.notStrictEqual(await call, 200)
      const calls = await queryStore(dir, `SELECT state, charged FROM calls WHERE account_id = '${account}'`)
      assert.deepStrictEqual(
        calls.map((row) => ({ state: row.state, charged: Number(row.charged) })),
        [{ state: "released", charged: 0 }]
      )
      const claims = await queryStore(
        dir,
        `SELECT state FROM idempotency_keys WHERE account_id = '${account}' AND state = 'running'`
      )
      assert.deepStrictEqual(claims, [], "no claim is left running")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a signal during the start-up stops it at once, exit 0", async () => {
    // A database that accepts the connection and never answers holds the start-up where it is.
    const { port, connected } = await silentServer()
    const service = await start(
      { DATABASE_URL: `postgres://svc@127.0.0.1:${port}/svc`, SHUTDOWN_DRAIN_SECONDS: "30" },
      { waitForListening: false }
    )
    await connected
    service.child.kill("SIGTERM")
    const exit = await within(service.exited, 5000, "the exit after a signal during the start-up")
    assert.deepStrictEqual(exit, { code: 0, signal: null })
    assert.notMatch(service.output(), /listening on|draining/)
  })

  it("a second signal exits at once", async () => {
    const service = await start({ SHUTDOWN_DRAIN_SECONDS: "30" })
    service.child.kill("SIGTERM")
    await service.waitFor(/SIGTERM: draining/)
    const second = Date.now()
    service.child.kill("SIGINT")
    const exit = await within(service.exited, 3000, "the exit after a second signal")
    assert.isBelow(Date.now() - second, 3000)
    assert.strictEqual(exit.code, 1)
  })
})
