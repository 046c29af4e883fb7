import { setTimeout as sleep } from "node:timers/promises"
import { paidAccounts } from "./accounts.ts"
import { startPgProxy } from "./pgwire.ts"
import { call, expectStatus, startService } from "./service.ts"
import { query, sampleWorld } from "./world.ts"

export interface RoundTrips {
  readonly call: string
  /** Fewest and most round trips over the repetitions (housekeeping and the settings cache add some). */
  readonly min: number
  readonly max: number
  /** The statements of the repetition with the fewest round trips, in order. */
  readonly statements: ReadonlyArray<string>
}

const repetitions = 6

/** Single calls through a counting proxy in front of PostgreSQL: how many times each waits on the database. */
export const countRoundTrips = async (databaseUrl: string): Promise<ReadonlyArray<RoundTrips>> => {
  const target = new URL(databaseUrl)
  const proxy = await startPgProxy({ host: target.hostname, port: Number(target.port || "5432") })
  const through = new URL(databaseUrl)
  through.hostname = "127.0.0.1"
  through.port = String(proxy.port)
  const service = await startService({
    label: "roundtrips",
    store: "postgres",
    databaseUrl: through.toString()
  })
  try {
    const [account] = await paidAccounts(service.url, service.admin, 1, 1_000_000, 78)
    const key = account!.key
    const people = sampleWorld().people
    const profile = (slug: string) =>
      `/v1/profnet/profiles${query({ identifier: slug, freshness: "recent" })}`
    const hot = profile(people[0]!.slug)
    expectStatus("warm-up", await call(service.url, hot, { key, idempotencyKey: "rt-warm-0" }), 200)
    let n = 0
    const calls: ReadonlyArray<readonly [string, (i: number) => Promise<unknown>]> = [
      [
        "metered call, cache hit (getProfile, recent)",
        () => call(service.url, hot, { key, idempotencyKey: `rt-call-${n++}` })
      ],
      [
        "metered call, cache miss (getProfile of a new profile)",
        (i) => call(service.url, profile(people[1 + i]!.slug), { key, idempotencyKey: `rt-call-${n++}` })
      ],
      ["idempotent replay", () => call(service.url, hot, { key, idempotencyKey: "rt-warm-0" })],
      ["GET /v1/usage", () => call(service.url, "/v1/usage", { key })],
      [
        "rejected call (INVALID_INPUT)",
        () =>
          call(service.url, `/v1/profnet/profiles${query({ identifier: "x", sections: "bogus" })}`, { key })
      ]
    ]
    if (proxy.encrypted()) throw new Error("the service talks TLS to PostgreSQL; the proxy cannot count")
    const results: Array<RoundTrips> = []
    for (const [name, send] of calls) {
      const runs: Array<{ roundTrips: number; statements: ReadonlyArray<string> }> = []
      for (let i = 0; i < repetitions; i++) {
        // Half of the repetitions after the 1-second settings cache has expired.
        await sleep(i % 2 === 0 ? 50 : 1100)
        proxy.reset()
        await send(i)
        await sleep(30)
        runs.push(proxy.snapshot())
      }
      const sorted = [...runs].sort((a, b) => a.roundTrips - b.roundTrips)
      results.push({
        call: name,
        min: sorted[0]!.roundTrips,
        max: sorted[sorted.length - 1]!.roundTrips,
        statements: sorted[0]!.statements.map((text) => text.replace(/\s+/g, " ").trim())
      })
    }
    return results
  } finally {
    await service.stop()
    await proxy.close()
  }
}
