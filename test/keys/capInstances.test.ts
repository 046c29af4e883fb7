import { assert, describe, layer } from "@effect/vitest"
import type { Client } from "@modelcontextprotocol/client"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { usageMetaKey } from "../../src/surfaces/mcp/toolResults.ts"
import { post, signIn } from "../identity/support.ts"
import { connect, modes } from "../mcp/support.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { instance } from "../webhooks/support.ts"

const cap = { parent: 50, child: 20 } as const
const cost = 3

/** One logical call's last answer: its status, problem code and limit, and what it was charged. */
interface Answer {
  readonly idem: string
  readonly via: "rest" | "mcp"
  readonly key: "parent" | "child"
  readonly ok: boolean
  readonly code?: string
  readonly limit?: string
  readonly charged?: number
  readonly capLeft?: number
}

describe(`a key cap across two instances, over REST and MCP (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), {
    timeout: 180_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "concurrent calls of a capped key and its child on two instances: never past either cap, refused calls charged nothing, resumed with the same Idempotency-Key",
      () =>
        Effect.gen(function* () {
          const a = yield* instance()
          const b = yield* instance()
          const ip = "10.99.0.1"
          const minted = yield* a.mint(ip)
          const owner = yield* signIn(a, "cap-instances@example.com", { key: minted.key, ip })
          const admin = Context.get(a.context, Admin)
          yield* Effect.orDie(admin.setPlan(minted.account_id, "production"))
          yield* Effect.orDie(admin.credit(minted.account_id, 10_000, "balance", "test purchase"))
          const sql = Context.get(a.context, SqlClient.SqlClient)
          const spendable = Effect.orDie(
            sql<{
              n: unknown
            }>`SELECT grant_credits + balance_credits AS n FROM accounts WHERE id = ${minted.account_id}`
          ).pipe(Effect.map(([row]) => Number(row?.n)))
          const before = yield* spendable

          const parent = yield* post(
            b,
            "/v1/keys",
            { label: "race", spend_cap_credits: cap.parent, may_delegate: true },
            { key: owner.management_token, ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const child = yield* post(
            a,
            "/v1/keys/child",
            { spend_cap_credits: cap.child },
            { key: parent.body.key, ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          const keys = { parent: parent.body.key as string, child: child.body.key as string }
          const mode = modes[0]
          const mcp: Record<string, Client> = {}
          for (const [name, at] of [
            ["a", a],
            ["b", b]
          ] as const)
            for (const who of ["parent", "child"] as const)
              mcp[`${name}-${who}`] = yield* connect(`${at.url}/mcp`, { key: keys[who], ip }, mode)

          // 72 calls of 3 credits: REST and MCP, parent and child, both instances, cache hits among them.
          const plan = Array.from({ length: 72 }, (_, n) => ({
            n,
            on: n % 2 === 0 ? ("a" as const) : ("b" as const),
            via: Math.floor(n / 2) % 2 === 0 ? ("rest" as const) : ("mcp" as const),
            key: Math.floor(n / 4) % 2 === 0 ? ("parent" as const) : ("child" as const),
            value: `v${n % 6}`,
            idem: `cap-instances-${String(n).padStart(3, "0")}`
          }))
          const once = (call: (typeof plan)[number]): Effect.Effect<Answer | "busy"> => {
            const base = { idem: call.idem, via: call.via, key: call.key }
            if (call.via === "rest")
              return Effect.map(
                (call.on === "a" ? a : b).call(
                  `/v1/profnet/test-echo?value=${call.value}&cost=${cost}&delay_ms=5`,
                  {
                    key: keys[call.key],
                    ip,
                    idempotencyKey: call.idem
                  }
                ),
                (reply): Answer | "busy" => {
                  if (reply.body?.code === "CONCURRENCY_LIMIT") return "busy"
                  const capLeft = reply.headers.get("key-cap-remaining")
                  return reply.status === 200
                    ? {
                        ...base,
                        ok: true,
                        charged: Number(reply.headers.get("credits-charged")),
                        ...(capLeft === null ? {} : { capLeft: Number(capLeft) })
                      }
                    : { ...base, ok: false, code: reply.body?.code, limit: reply.body?.limit }
                }
              )
            return Effect.map(
              Effect.promise(() =>
                mcp[`${call.on}-${call.key}`]!.callTool({
                  name: "testEcho",
                  arguments: { value: call.value, cost, delay_ms: 5, idempotency_key: call.idem }
                })
              ),
              (result): Answer | "busy" => {
                const usage = (result._meta as Record<string, any> | undefined)?.[usageMetaKey]
                if (result.isError === true) {
                  const text =
                    (result.content as ReadonlyArray<{ type: string; text?: string }>)[0]?.text ?? "{}"
                  const problem = JSON.parse(text)
                  if (problem.code === "CONCURRENCY_LIMIT") return "busy"
                  return { ...base, ok: false, code: problem.code, limit: problem.limit }
                }
                return {
                  ...base,
                  ok: true,
                  charged: usage?.credits_charged,
                  ...(usage?.key_cap_remaining === undefined ? {} : { capLeft: usage.key_cap_remaining })
                }
              }
            )
          }
          const answered = yield* Effect.forEach(
            plan,
            (call) =>
              Effect.gen(function* () {
                // A call turned away by the one-in-flight rule retries, as a careful client does.
                for (let attempt = 0; attempt < 100; attempt++) {
                  const answer = yield* once(call)
                  if (answer !== "busy") return answer
                  yield* Effect.sleep(5)
                }
                return yield* Effect.die(`${call.idem} never got through`)
              }),
            { concurrency: 12 }
          )

          const ok = answered.filter((answer) => answer.ok)
          const refused = answered.filter((answer) => !answer.ok)
          assert.deepStrictEqual(
            [...new Set(refused.map((answer) => `${answer.code} ${answer.limit}`))],
            ["INSUFFICIENT_CREDITS key_cap"],
            "every refusal is the key cap's"
          )
          assert.isTrue(
            ok.every(
              (answer) => answer.charged === cost && answer.capLeft !== undefined && answer.capLeft >= 0
            ),
            JSON.stringify(ok)
          )
          // 50 credits hold 16 calls of 3 between parent and child; the child's 20 hold at most 6.
          assert.strictEqual(ok.length, 16)
          assert.isAtMost(ok.filter((answer) => answer.key === "child").length, 6)
          assert.isAbove(ok.filter((answer) => answer.via === "mcp").length, 0)
          assert.isAbove(ok.filter((answer) => answer.via === "rest").length, 0)

          const spentBy = (keyId: string) =>
            Effect.orDie(
              sql<{ n: unknown }>`SELECT COALESCE(SUM(charged), 0) AS n FROM calls
                WHERE key_id = ${keyId} AND state = 'settled'`
            ).pipe(Effect.map(([row]) => Number(row?.n)))
          const byParent = yield* spentBy(parent.body.key_id)
          const byChild = yield* spentBy(child.body.key_id)
          assert.strictEqual(byParent + byChild, 48)
          assert.isAtMost(byChild, cap.child)
          // Nothing charged for a refused call: no settled row under its key, the account down by 48 only.
          const refusedKeys = refused.map((answer) => answer.idem)
          const charges = yield* Effect.orDie(
            sql<{ n: unknown }>`SELECT count(*) AS n FROM calls
              WHERE account_id = ${minted.account_id} AND state = 'settled' AND charged > 0
                AND idempotency_key IN ${sql.in(refusedKeys)}`
          )
          assert.strictEqual(Number(charges[0]?.n), 0)
          assert.strictEqual(yield* spendable, before - 48)
          const listed = yield* a.call("/v1/keys", { key: owner.management_token, ip })
          const row = listed.body.keys.find((k: { key_id: string }) => k.key_id === parent.body.key_id)
          assert.strictEqual(row.spent_in_period, 48)

          // The cap raised by 3 on one instance: a refused parent call, resumed with its key on the other, goes through once.
          const raised = yield* post(
            a,
            "/v1/keys/update",
            { key_id: parent.body.key_id, spend_cap_credits: cap.parent + cost },
            { key: owner.management_token, ip }
          )
          assert.strictEqual(raised.status, 200, JSON.stringify(raised.body))
          const again = refused.find((answer) => answer.key === "parent" && answer.via === "rest")!
          const value = `v${Number(again.idem.slice(-3)) % 6}`
          const resumed = yield* b.call(`/v1/profnet/test-echo?value=${value}&cost=${cost}&delay_ms=5`, {
            key: keys.parent,
            ip,
            idempotencyKey: again.idem
          })
          assert.strictEqual(resumed.status, 200, JSON.stringify(resumed.body))
          assert.strictEqual(resumed.headers.get("key-cap-remaining"), "2")
          assert.strictEqual((yield* spentBy(parent.body.key_id)) + (yield* spentBy(child.body.key_id)), 51)
          yield* a.stop
          yield* b.stop
        })
    )
  })
})
