/**
 * `node bench/receiptSignature.ts [calls]`: what asking for a signed receipt costs a data call. One
 * service in this process (PGlite in memory, the simulated world), one funded key, and the same
 * cached data call (a cache hit: one charge statement, the metered hot path) sent `calls` times
 * each way, `Prefer: receipt-signature` or not, in alternating blocks so drift falls on both. Prints
 * the mean wall time and CPU time (this process's: service and client) per call each way and their
 * ratios. Sequential calls over loopback: the latency one caller sees, not the server's throughput.
 * On a loaded machine the CPU time is the steadier of the two.
 */
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { AdminClient } from "../src/clients/operator-cli/AdminClient.ts"
import { AppConfig } from "../src/config.ts"
import { defaultPolicy } from "../src/domain/policy.ts"
import { operations } from "../src/operations/registry.ts"
import { appLayer } from "../src/service.ts"
import * as Database from "../src/store/Database.ts"
import { layerWorld, UpstreamFaults } from "../src/upstream/Upstream.ts"

const calls = Number(process.argv[2] ?? 2000)
const block = 100
const adminToken = "test-admin-token-7f3a9c2e5b8d1f4a6c"

const app = appLayer(operations, Database.pglite(":memory:")).pipe(
  Layer.provideMerge(layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))),
  Layer.provide(
    AppConfig.layerTest({
      trustedProxies: ["127.0.0.1", "::1"],
      // The per-minute allowance would stop a loop this fast; it is not what is measured.
      policy: {
        ...defaultPolicy,
        ratePerMinute: { trial: 1_000_000, flex: 1_000_000, production: 1_000_000 }
      }
    })
  )
)

const program = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  const address = server.address
  const base = "port" in address ? `http://127.0.0.1:${address.port}` : ""
  const minted = (yield* Effect.promise(() =>
    fetch(`${base}/v1/keys/mint`, { method: "POST", headers: { "x-forwarded-for": "10.80.0.1" } }).then((r) =>
      r.json()
    )
  )) as { key: string; account_id: string }
  yield* Effect.flatMap(AdminClient, (admin) =>
    admin.credit({ accountId: minted.account_id, credits: 1_000_000, kind: "balance" })
  ).pipe(Effect.provide(AdminClient.layerFor(base, adminToken)))
  yield* Effect.flatMap(AdminClient, (admin) =>
    admin.plan({ accountId: minted.account_id, plan: "production" })
  ).pipe(Effect.provide(AdminClient.layerFor(base, adminToken)))
  const url = `${base}/v1/profnet/profiles?identifier=richard-lewis-07kvcfn`
  let n = 0
  const call = async (signed: boolean) => {
    const response = await fetch(url, {
      headers: {
        authorization: `Bearer ${minted.key}`,
        "x-forwarded-for": "10.80.0.1",
        "idempotency-key": `bench-${n++}-${Math.random()}`,
        ...(signed ? { prefer: "receipt-signature" } : {})
      }
    })
    const body = (await response.json()) as { receipt?: { signature?: string } }
    if (response.status !== 200) throw new Error(`${response.status} ${JSON.stringify(body)}`)
    if (signed !== (body.receipt?.signature !== undefined)) throw new Error("signed only when asked")
  }
  const elapsed = { plain: 0, signed: 0 }
  // This process's CPU time (the service and the client both): less moved by other processes than the wall clock.
  const cpu = { plain: 0, signed: 0 }
  yield* Effect.promise(async () => {
    for (let i = 0; i < 200; i++) await call(i % 2 === 0) // warm up both paths, and the cache
    for (let done = 0; done < calls; done += block)
      for (const signed of [false, true]) {
        const started = performance.now()
        const cpuBefore = process.cpuUsage()
        for (let i = 0; i < block; i++) await call(signed)
        const used = process.cpuUsage(cpuBefore)
        cpu[signed ? "signed" : "plain"] += (used.user + used.system) / 1000
        elapsed[signed ? "signed" : "plain"] += performance.now() - started
      }
  })
  const plain = (elapsed.plain / calls) * 1000
  const signed = (elapsed.signed / calls) * 1000
  const cpuPlain = (cpu.plain / calls) * 1000
  const cpuSigned = (cpu.signed / calls) * 1000
  console.log(
    `${calls} cached data calls each way, sequential: wall ${plain.toFixed(0)} µs/call without Prefer, ${signed.toFixed(0)} with Prefer: receipt-signature (ratio ${(signed / plain).toFixed(3)}); CPU ${cpuPlain.toFixed(0)} µs/call without, ${cpuSigned.toFixed(0)} with (ratio ${(cpuSigned / cpuPlain).toFixed(3)}, +${(cpuSigned - cpuPlain).toFixed(0)} µs)`
  )
})

Effect.runPromise(
  Effect.scoped(Effect.flatMap(Layer.build(app), (context) => Effect.provide(program, context)))
).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
