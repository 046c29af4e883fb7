import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../src/config.ts"
import { appInstance } from "../support/app.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { latestMail, linkTokenIn, post, signIn } from "./support.ts"

const config = AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"] })

describe(`revocation across instances (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(config)), { timeout: 60_000, excludeTestServices: true })(
    (it) => {
      // Two processes on one PostgreSQL database: nothing one instance knows in memory may outlive a revocation on the other.
      it.effect.runIf(storeName === "postgres")(
        "a key, a management token or a rekey on instance A stops the old secret on instance B at once (PostgreSQL only)",
        () =>
          Effect.gen(function* () {
            const a = (yield* appInstance(testOperations)).client
            const b = (yield* appInstance(testOperations)).client
            const ip = "10.67.0.1"
            const minted = yield* a.mint(ip)
            const owner = yield* signIn(a, "instances@example.com", { key: minted.key, ip })
            const token = owner.management_token
            const created = yield* post(b, "/v1/keys", { label: "on-b" }, { key: token, ip })
            assert.strictEqual(created.status, 201, JSON.stringify(created.body))

            // Both secrets are in use on B first, so any per-instance memory of them is warm.
            for (const key of [minted.key, created.body.key, token])
              assert.strictEqual((yield* b.call("/v1/usage", { key, ip })).status, 200)
            const data = (key: string) =>
              b.call("/v1/profnet/test-echo?value=across", { key, ip, idempotencyKey: crypto.randomUUID() })
            assert.strictEqual((yield* data(created.body.key)).status, 200)

            const revoked = yield* post(
              a,
              "/v1/keys/revoke",
              { key_id: created.body.key_id },
              { key: token, ip }
            )
            assert.strictEqual(revoked.status, 200)
            // B's first request after it: the data route takes a remembered key unconfirmed; a call that is not a
            // cache hit confirms it before anything is held or charged.
            const dataAfterRevoke = yield* data(created.body.key)
            assert.strictEqual(dataAfterRevoke.status, 401)
            assert.strictEqual(dataAfterRevoke.body.code, "UNAUTHORIZED")
            const afterRevoke = yield* b.call("/v1/usage", { key: created.body.key, ip })
            assert.strictEqual(afterRevoke.status, 401)
            assert.strictEqual(afterRevoke.body.code, "UNAUTHORIZED")

            const listed = yield* b.call("/v1/keys", { key: token, ip })
            const mintedId = listed.body.keys.find((key: any) => key.revoked_at === null).key_id
            const rotated = yield* post(a, "/v1/keys/rotate", { key_id: mintedId }, { key: token, ip })
            assert.strictEqual(rotated.status, 200)
            assert.strictEqual((yield* b.call("/v1/usage", { key: minted.key, ip })).status, 401)
            assert.strictEqual((yield* b.call("/v1/usage", { key: rotated.body.key, ip })).status, 200)

            // Recovery on A revokes the rotated key; B refuses it on the next request.
            yield* post(a, "/v1/recover", { email: "instances@example.com" }, { ip })
            const link = linkTokenIn((yield* latestMail("instances@example.com")).text, "/recover")
            const rekeyed = yield* post(a, "/v1/rekey", { token: link }, { ip })
            assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
            assert.strictEqual((yield* b.call("/v1/usage", { key: rotated.body.key, ip })).status, 401)
            assert.strictEqual((yield* b.call("/v1/usage", { key: rekeyed.body.key, ip })).status, 200)
            // The link is used on every instance.
            assert.strictEqual((yield* post(b, "/v1/rekey", { token: link }, { ip })).status, 401)

            // A management token logged out on A is dead on B, on management and data routes.
            const logout = yield* post(a, "/v1/auth/logout", {}, { key: token, ip })
            assert.strictEqual(logout.status, 200)
            assert.strictEqual((yield* b.call("/v1/keys", { key: token, ip })).status, 401)
            assert.strictEqual((yield* b.call("/v1/usage", { key: token, ip })).status, 401)
          })
      )
    }
  )
})
