import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { post, signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.67")
const policy = {
  ...defaultPolicy,
  childKeyChangesPerKey: { limit: 4, windowMs: 60_000 },
  childKeyChangesPerAccount: { limit: 6, windowMs: 60_000 }
}

/** A claimed account: its first key (the parent) and its owner's management token. */
const owner = (email: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    const signedIn = yield* signIn(app, email, { key: minted.key, ip })
    const token = signedIn.management_token
    // Only a key its owner granted may_delegate makes children.
    const [first] = (yield* app.call("/v1/keys", { key: token, ip })).body.keys
    const granted = yield* post(
      app,
      "/v1/keys/update",
      { key_id: first.key_id, may_delegate: true },
      { key: token, ip }
    )
    assert.strictEqual(granted.status, 200, JSON.stringify(granted.body))
    return { app, ip, ...minted, token }
  })

const activeOwn = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM api_keys
      WHERE account_id = ${accountId} AND revoked_at IS NULL AND parent_key_id IS NULL`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

/**
 * Audit 2 (Low): 150 child-key cycles in 2.7 s, and a spend key could fill the account's 100
 * active-key places with children (locking its owner out of making keys).
 */
describe(`child keys: their own pool, and limited changes (${storeName})`, () => {
  layer(testApp(testOperations, { policy }), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("making and revoking children is limited per key and per account: RATE_LIMITED", () =>
      Effect.gen(function* () {
        const who = yield* owner("child-limits@example.com")
        const as = { key: who.key, ip: who.ip }
        const first = yield* post(who.app, "/v1/keys/child", { spend_cap_credits: 5 }, as)
        assert.strictEqual(first.status, 201, JSON.stringify(first.body))
        assert.strictEqual(
          (yield* post(who.app, "/v1/keys/child/revoke", { key_id: first.body.key_id }, as)).status,
          200
        )
        for (let n = 0; n < 2; n++)
          assert.strictEqual(
            (yield* post(who.app, "/v1/keys/child", { spend_cap_credits: 5 }, as)).status,
            201
          )
        // The 5th change of this key in the minute.
        const limited = yield* post(who.app, "/v1/keys/child", { spend_cap_credits: 5 }, as)
        assert.strictEqual(limited.status, 429, JSON.stringify(limited.body))
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.isAbove(limited.body.retry_after_seconds, 0)
        assert.match(limited.body.message, /child key/)
        // Another full key of the account has its own 4, within the account's 6.
        const other = yield* post(
          who.app,
          "/v1/keys",
          { label: "second", may_delegate: true },
          { key: who.token, ip: who.ip }
        )
        const asOther = { key: other.body.key, ip: who.ip }
        for (let n = 0; n < 2; n++)
          assert.strictEqual(
            (yield* post(who.app, "/v1/keys/child", { spend_cap_credits: 5 }, asOther)).status,
            201
          )
        const accountLimited = yield* post(who.app, "/v1/keys/child", { spend_cap_credits: 5 }, asOther)
        assert.strictEqual(accountLimited.status, 429)
        assert.strictEqual(accountLimited.body.code, "RATE_LIMITED")
        // Refused changes made nothing: 2 + 2 working children.
        const listed = yield* who.app.call("/v1/keys/children", as)
        assert.strictEqual(listed.body.keys.filter((key: any) => key.revoked_at === null).length, 2)
      })
    )

    it.effect("100 children of a key do not take the owner's 100 places; the key's own bound holds", () =>
      Effect.gen(function* () {
        const who = yield* owner("child-pool@example.com")
        const sql = yield* SqlClient.SqlClient
        const now = Date.now()
        // 100 working children straight in the store (as 100 creations would leave them).
        for (let i = 0; i < 100; i++)
          yield* sql`INSERT INTO api_keys (id, account_id, secret_hash, hint, label, created_at, parent_key_id)
            VALUES (${`key_pool_${i}`}, ${who.account_id}, ${`pool-hash-${i}`}, 'svc_…', 'child', ${now},
              ${
                (yield* sql<{ id: string }>`SELECT id FROM api_keys WHERE account_id = ${who.account_id}
                AND parent_key_id IS NULL LIMIT 1`)[0]!.id
              })`.pipe(Effect.orDie)
        const more = yield* post(
          who.app,
          "/v1/keys/child",
          { spend_cap_credits: 5 },
          { key: who.key, ip: who.ip }
        )
        assert.strictEqual(more.status, 400, JSON.stringify(more.body))
        assert.strictEqual(more.body.code, "INVALID_INPUT")
        assert.match(more.body.message, /100 working child keys/)
        // The owner still makes keys: children have their own pool.
        const made = yield* post(who.app, "/v1/keys", { label: "owner's" }, { key: who.token, ip: who.ip })
        assert.strictEqual(made.status, 201, JSON.stringify(made.body))
        assert.strictEqual(yield* activeOwn(who.account_id), 2)
      })
    )
  })
})
