import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { adoptClient, revokeApp, sqlAdapter, sweepExpired } from "../../src/oauth/adapter.ts"
import { freshDatabase, storeName } from "../support/database.ts"

describe(`the oidc-provider adapter over SqlClient (${storeName})`, () => {
  layer(freshDatabase, { timeout: 60_000 })((it) => {
    it.effect(
      "upsert, find by id, uid and user code, consume, destroy, revoke by grant and by app, sweep",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const services = yield* Effect.context<SqlClient.SqlClient>()
          const week = 7 * 24 * 3600 * 1000
          const Adapter = sqlAdapter((effect) => Effect.runPromiseWith(services)(effect), {
            unusedClientMs: week
          })
          const codes = new Adapter("AuthorizationCode")
          const tokens = new Adapter("AccessToken")
          const interactions = new Adapter("Interaction")
          const run = <A>(promise: () => Promise<A>) => Effect.promise(promise)

          yield* run(() => codes.upsert("c1", { grantId: "g1", accountId: "a1", clientId: "k1" }, 60))
          yield* run(() => tokens.upsert("t1", { grantId: "g1", accountId: "a1", clientId: "k1" }, 3600))
          yield* run(() => tokens.upsert("t2", { grantId: "g2", accountId: "a1", clientId: "k2" }, 3600))
          yield* run(() => interactions.upsert("i1", { uid: "u1", userCode: "ABCD" }, 600))
          assert.deepStrictEqual(yield* run(() => codes.find("c1")), {
            grantId: "g1",
            accountId: "a1",
            clientId: "k1"
          })
          assert.isUndefined(yield* run(() => tokens.find("c1")))
          assert.strictEqual((yield* run(() => interactions.findByUid("u1")))?.uid, "u1")
          assert.strictEqual((yield* run(() => interactions.findByUserCode("ABCD")))?.userCode, "ABCD")

          yield* run(() => codes.consume("c1"))
          assert.isAbove(Number((yield* run(() => codes.find("c1")))?.consumed), 0)

          // Upsert replaces the payload; destroy forgets.
          yield* run(() => interactions.upsert("i1", { uid: "u1", returnTo: "/x" }, 600))
          assert.strictEqual((yield* run(() => interactions.find("i1")))?.returnTo, "/x")
          yield* run(() => interactions.destroy("i1"))
          assert.isUndefined(yield* run(() => interactions.find("i1")))

          yield* run(() => tokens.revokeByGrantId("g1"))
          assert.isUndefined(yield* run(() => tokens.find("t1")))
          assert.isUndefined(yield* run(() => codes.find("c1")))
          assert.isDefined(yield* run(() => tokens.find("t2")))
          yield* revokeApp("a1", "k2")
          assert.isUndefined(yield* run(() => tokens.find("t2")))

          // Expired rows are never found, and the sweeper deletes them.
          yield* run(() => tokens.upsert("old", { grantId: "g3" }, 3600))
          yield* sql`UPDATE oauth_records SET expires_at = 1 WHERE id = 'old'`
          assert.isUndefined(yield* run(() => tokens.find("old")))
          assert.strictEqual(yield* sweepExpired, 1)
          const left = yield* sql<{
            n: number | string
          }>`SELECT COUNT(*) AS n FROM oauth_records WHERE id = 'old'`
          assert.strictEqual(Number(left[0]!.n), 0)

          // A registration has no lifetime from the library: it gets one until a client is adopted.
          const clients = new Adapter("Client")
          const registrationTokens = new Adapter("RegistrationAccessToken")
          const expiryOf = (model: string, id: string) =>
            sql<{ expires_at: number | string | null }>`SELECT expires_at FROM oauth_records
              WHERE model = ${model} AND id = ${id}`.pipe(
              Effect.map((rows) => (rows.length === 0 ? "gone" : rows[0]!.expires_at))
            )
          for (const id of ["kept", "dropped"]) {
            yield* run(() =>
              clients.upsert(id, { client_id: id, redirect_uris: ["https://a.example/cb"] }, undefined)
            )
            yield* run(() => registrationTokens.upsert(`rat-${id}`, { clientId: id }, undefined))
            assert.approximately(Number(yield* expiryOf("Client", id)), Date.now() + week, 60_000)
            assert.approximately(
              Number(yield* expiryOf("RegistrationAccessToken", `rat-${id}`)),
              Date.now() + week,
              60_000
            )
          }
          yield* adoptClient("kept")
          assert.isNull(yield* expiryOf("Client", "kept"))
          assert.isNull(yield* expiryOf("RegistrationAccessToken", "rat-kept"))
          yield* sql`UPDATE oauth_records SET expires_at = 1 WHERE id IN ('dropped', 'rat-dropped')`
          assert.isUndefined(yield* run(() => clients.find("dropped")))
          assert.strictEqual(yield* sweepExpired, 2)
          assert.strictEqual(yield* expiryOf("Client", "dropped"), "gone")
          assert.strictEqual(yield* expiryOf("RegistrationAccessToken", "rat-dropped"), "gone")
          assert.isDefined(yield* run(() => clients.find("kept")))
        }).pipe(Effect.orDie)
    )
  })
})
