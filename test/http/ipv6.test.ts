import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { perIpKey } from "../../src/domain/clientIp.ts"
import { post } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

describe("perIpKey", () => {
  it("IPv4 by its address, IPv6 by its /64, whatever the spelling", () => {
    assert.strictEqual(perIpKey("203.0.113.7", 64), "203.0.113.7")
    assert.strictEqual(perIpKey("::ffff:203.0.113.7", 64), "203.0.113.7")
    assert.strictEqual(perIpKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64), "2001:db8:1:2::/64")
    assert.strictEqual(perIpKey("2001:0DB8:0001:0002::1", 64), "2001:db8:1:2::/64")
    assert.strictEqual(perIpKey("2001:db8:1:3::1", 64), "2001:db8:1:3::/64")
    assert.strictEqual(perIpKey("2001:db8:1:2::1", 48), "2001:db8:1::/48")
    assert.strictEqual(perIpKey("2001:db8:1:2::1", 128), "2001:db8:1:2::1")
    assert.strictEqual(perIpKey("/run/svc.sock", 64), "/run/svc.sock")
  })
})

/** Addresses inside one /64, each different, as a client rotating through its network sends them. */
const rotating = (network: string) => {
  let n = 0
  return () => `${network}:${(++n).toString(16)}:${(n * 7).toString(16)}:${(n * 13).toString(16)}:1`
}

describe(`per-IP rules count an IPv6 client by its /64 (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("mint: 5 keys per /64 per hour, however many of its addresses ask", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const next = rotating("2001:db8:aa:1")
        const statuses: Array<number> = []
        for (let i = 0; i < 8; i++) {
          statuses.push((yield* app.call("/v1/keys/mint", { method: "POST", ip: next() })).status)
        }
        assert.deepStrictEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429])
        // The next /64 is another client.
        const other = yield* app.call("/v1/keys/mint", { method: "POST", ip: "2001:db8:aa:2::1" })
        assert.strictEqual(other.status, 200)
      })
    )

    it.effect("the free budget: 200 credits per /64 per day, not per address", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const next = rotating("2001:db8:bb:1")
        let charged = 0
        for (let round = 0; round < 3; round++) {
          const { key } = yield* app.mint(next())
          for (let call = 0; call < 3; call++) {
            const reply = yield* app.call("/v1/profnet/test-echo?value=v&cost=100", { key, ip: next() })
            if (reply.status === 200) charged += reply.body.cost.charged
            else assert.strictEqual(reply.body.code, "TRIAL_CAP_EXCEEDED", JSON.stringify(reply.body))
          }
        }
        assert.strictEqual(charged, 200)
        const usage = yield* app.call("/v1/usage", {
          key: (yield* app.mint("2001:db8:bb:1::9")).key,
          ip: next()
        })
        assert.strictEqual(usage.body.free_tier.used_today, 200, JSON.stringify(usage.body.free_tier))
        assert.strictEqual(usage.body.free_tier.ip, "2001:db8:bb:1::/64")
      })
    )

    it.effect("sign-in and recovery starts: 5 per /64 per 15 minutes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const [path, network] of [
          ["/v1/auth/email/start", "2001:db8:cc:1"],
          ["/v1/recover", "2001:db8:cc:2"]
        ] as const) {
          const next = rotating(network)
          const statuses: Array<number> = []
          for (let i = 0; i < 7; i++) {
            const reply = yield* post(app, path, { email: `person${i}@example.com` }, { ip: next() })
            statuses.push(reply.status)
          }
          assert.deepStrictEqual(statuses, [202, 202, 202, 202, 202, 429, 429], path)
        }
      })
    )
  })
})
