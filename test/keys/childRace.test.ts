import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { instance } from "../webhooks/support.ts"

/**
 * One lock order for making a child and revoking or rotating its parent (the account's row, then
 * the key rows): many child creations on two instances racing a revocation or a rotation of their
 * parent leave no working child of a parent that no longer works, and no such child answers a call.
 */

const creations = 24

describe(`child creation racing its parent's revocation and rotation, two instances (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), {
    timeout: 240_000,
    excludeTestServices: true
  })((it) => {
    it.effect("no orphan child survives, and none answers a data call", () =>
      Effect.gen(function* () {
        const a = yield* instance()
        const b = yield* instance()
        const ip = "10.98.0.1"
        const minted = yield* a.mint(ip)
        const owner = yield* signIn(a, "child-race@example.com", { key: minted.key, ip })
        const admin = Context.get(a.context, Admin)
        yield* Effect.orDie(admin.setPlan(minted.account_id, "production"))
        yield* Effect.orDie(admin.credit(minted.account_id, 10_000, "balance", "test purchase"))
        const sql = Context.get(a.context, SqlClient.SqlClient)
        const token = owner.management_token as string
        const madeCounts: Array<number> = []

        for (const [round, ending] of [
          [1, "revoke"],
          [2, "rotate"],
          [3, "revoke"],
          [4, "rotate"]
        ] as const) {
          const parent = yield* post(
            b,
            "/v1/keys",
            { label: `race ${round}`, may_delegate: true },
            { key: token, ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const made = Effect.forEach(
            Array.from({ length: creations }, (_, n) => n),
            (n) =>
              post(
                n % 2 === 0 ? a : b,
                "/v1/keys/child",
                { label: `c${round}-${n}`, spend_cap_credits: 5 },
                { key: parent.body.key, ip }
              ),
            { concurrency: creations }
          )
          const end = Effect.delay(
            post(
              round % 2 === 0 ? a : b,
              `/v1/keys/${ending}`,
              { key_id: parent.body.key_id },
              { key: token, ip }
            ),
            `${5 * round} millis`
          )
          const [answers, ended] = yield* Effect.all([made, end], { concurrency: 2 })
          assert.strictEqual(ended.status, 200, JSON.stringify(ended.body))
          const children = answers.filter((answer) => answer.status === 201)
          madeCounts.push(children.length)
          for (const answer of answers) assert.include([201, 401], answer.status, JSON.stringify(answer.body))

          const orphans = yield* Effect.orDie(
            sql<{ id: string }>`SELECT c.id FROM api_keys c JOIN api_keys p ON p.id = c.parent_key_id
              WHERE c.account_id = ${minted.account_id} AND c.revoked_at IS NULL AND p.revoked_at IS NOT NULL`
          )
          assert.deepStrictEqual(
            orphans.map((row) => row.id),
            [],
            `round ${round} (${ending}): ${children.length} children made`
          )
          for (const [n, child] of children.entries()) {
            const call = yield* (n % 2 === 0 ? a : b).call("/v1/profnet/test-echo?value=v&cost=1", {
              key: child.body.key,
              ip,
              idempotencyKey: crypto.randomUUID()
            })
            assert.strictEqual(call.status, 401, JSON.stringify(call.body))
          }
        }
        // The race was run: children were made while their parent was being ended.
        assert.isAbove(
          madeCounts.reduce((sum, n) => sum + n, 0),
          0,
          `children made per round: ${madeCounts.join(", ")}`
        )
        yield* Effect.logInfo(`children made per round: ${madeCounts.join(", ")} of ${creations}`)
      })
    )
  })
})
