import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { operations } from "../../src/operations/registry.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { post, signIn } from "../identity/support.ts"
import { testSeed } from "../support/app.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { eventually, instance } from "../webhooks/support.ts"
import { buy } from "./support.ts"

const world = makeWorld(testSeed)
const slugs = (() => {
  const page = world.searchPeople({ keywords: "engineer" }, undefined, 30)
  if (page === "invalid_cursor") throw new Error("unexpected")
  return page.items.filter((item) => item.public_identifier !== null).map((item) => item.public_identifier!)
})()

/** The ledger of an account's top-ups: each open or paid one, and the purchases that credited them. */
const ledger = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const topups = yield* Effect.orDie(
      sql`SELECT id, state, call_id, price_usd_cents FROM topups
        WHERE account_id = ${accountId} ORDER BY created_at, id`
    )
    const purchases = yield* Effect.orDie(
      sql`SELECT payment_ref FROM purchases WHERE account_id = ${accountId} AND payment_ref LIKE 'topup:%'`
    )
    return {
      topups: topups.map((row) => ({
        id: String(row.id),
        state: String(row.state),
        callId: String(row.call_id),
        price_usd_cents: Number(row.price_usd_cents)
      })),
      purchases: purchases.map((row) => String(row.payment_ref))
    }
  })

describe(`automatic top-up across instances (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(AppConfig.layerTest())), {
    timeout: 180_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "two instances charging one account at once: never two top-ups at once, never past the monthly maximum, none applied twice",
      () =>
        Effect.gen(function* () {
          const a = yield* instance({}, undefined, operations)
          const b = yield* instance({}, undefined, operations)
          yield* Effect.ensuring(
            Effect.gen(function* () {
              const ip = "10.92.0.1"
              const minted = yield* a.mint(ip)
              const token = (yield* signIn(a, "topup-instances@example.com", { key: minted.key, ip }))
                .management_token
              yield* buy(a, "flex", { key: minted.key, ip })
              // The line above everything: every charge of grant or balance wants a top-up; three fit the month.
              const armed = yield* post(
                b,
                "/v1/topup",
                { below_credits: 1_000_000_000, monthly_max_usd_cents: 6_000 },
                {
                  key: token,
                  ip
                }
              )
              assert.strictEqual(armed.status, 200, JSON.stringify(armed.body))

              // The same profiles warmed by another account: this account's calls are cache hits
              // (`svc_charge_hits` arms top-ups too) as well as full calls.
              const other = yield* a.mint("10.92.0.2")
              yield* buy(a, "flex", { key: other.key, ip: "10.92.0.2" })
              for (const slug of slugs.slice(0, 6))
                yield* a.call(`/v1/profnet/profiles?identifier=${slug}`, {
                  key: other.key,
                  ip: "10.92.0.2",
                  idempotencyKey: crypto.randomUUID()
                })
              // Eight at once on one account: each call meets the one-call-in-flight rule and, as a
              // careful client does, retries with its Idempotency-Key until it runs (on its instance).
              const statuses = yield* Effect.forEach(
                Array.from({ length: 48 }, (_, n) => n),
                (n) => {
                  const idempotencyKey = crypto.randomUUID()
                  const once = Effect.map(
                    (n % 2 === 0 ? a : b).call(
                      n % 3 === 0
                        ? `/v1/profnet/profiles?identifier=${slugs[n % 6]}`
                        : `/v1/profnet/profiles?identifier=${slugs[6 + (n % 20)]}&freshness=realtime`,
                      { key: minted.key, ip, idempotencyKey }
                    ),
                    (reply) => reply.status
                  )
                  const attempt = (left: number): Effect.Effect<number> =>
                    Effect.flatMap(once, (status) =>
                      status === 429 && left > 0
                        ? Effect.andThen(Effect.sleep("20 millis"), attempt(left - 1))
                        : Effect.succeed(status)
                    )
                  return attempt(100)
                },
                { concurrency: 8 }
              )
              assert.isAtLeast(
                statuses.filter((status) => status === 200).length,
                10,
                JSON.stringify(statuses)
              )
              // Every top-up settles (both instances' workers race for each).
              const settled = yield* eventually(
                ledger(minted.account_id),
                (found) => found.topups.length > 0 && found.topups.every((row) => row.state === "succeeded"),
                "the top-ups settled"
              )
              const spent = settled.topups.reduce((sum, row) => sum + row.price_usd_cents, 0)
              assert.isAtMost(spent, 6_000, "never past the monthly maximum")
              assert.isAtMost(settled.topups.length, 3)
              assert.deepStrictEqual(
                [...settled.purchases].sort(),
                settled.topups.map((row) => `topup:${row.id}`).sort(),
                "each top-up credited by exactly one purchase"
              )
              const view = yield* a.call("/v1/topup", { key: token, ip })
              assert.strictEqual(view.body.month_spent_usd_cents, spent)
            }),
            Effect.andThen(a.stop, b.stop)
          )
        })
    )

    it.effect("a cache hit's one-statement charge arms the top-up as a full call does", () =>
      Effect.gen(function* () {
        const app = yield* instance({}, undefined, operations)
        const ip = "10.92.1.1"
        const minted = yield* app.mint(ip)
        const token = (yield* signIn(app, "topup-hit@example.com", { key: minted.key, ip })).management_token
        yield* buy(app, "flex", { key: minted.key, ip })
        const slug = slugs[1]!
        // Warmed by another account: this account's call is served from the stored copy.
        const other = yield* app.mint("10.92.1.2")
        yield* buy(app, "flex", { key: other.key, ip: "10.92.1.2" })
        yield* app.call(`/v1/profnet/profiles?identifier=${slug}`, {
          key: other.key,
          ip: "10.92.1.2",
          idempotencyKey: crypto.randomUUID()
        })
        yield* post(
          app,
          "/v1/topup",
          { below_credits: 1_000_000_000, monthly_max_usd_cents: 2_000 },
          { key: token, ip }
        )
        const hit = yield* app.call(`/v1/profnet/profiles?identifier=${slug}`, {
          key: minted.key,
          ip,
          idempotencyKey: crypto.randomUUID()
        })
        assert.strictEqual(hit.status, 200, JSON.stringify(hit.body))
        assert.strictEqual(hit.body.freshness.served, "recent")
        const found = yield* eventually(
          ledger(minted.account_id),
          (rows) => rows.topups[0]?.state === "succeeded",
          "the top-up"
        )
        assert.strictEqual(found.topups[0]!.callId, hit.body.receipt.id, "armed by the hit's own charge")
        const sql = yield* SqlClient.SqlClient
        const [call] = yield* Effect.orDie(
          sql`SELECT created_at, lease_expires_at FROM calls WHERE id = ${hit.body.receipt.id}`
        )
        assert.strictEqual(Number(call!.lease_expires_at), Number(call!.created_at), "a hit: never reserved")
        yield* app.stop
      })
    )

    it.effect.runIf(storeName === "postgres")(
      "svc_topup_arm in two transactions at once, even without the account's lock: one top-up (PostgreSQL only)",
      () =>
        Effect.gen(function* () {
          const app = yield* instance({}, undefined, operations)
          const ip = "10.92.2.1"
          const minted = yield* app.mint(ip)
          const token = (yield* signIn(app, "topup-race@example.com", { key: minted.key, ip }))
            .management_token
          yield* buy(app, "flex", { key: minted.key, ip })
          yield* post(
            app,
            "/v1/topup",
            { below_credits: 1_000_000_000, monthly_max_usd_cents: 100_000 },
            { key: token, ip }
          )
          yield* app.stop
          const sql = yield* SqlClient.SqlClient
          // Each transaction arms, then holds its transaction open a while: the second waits on the
          // first's open top-up (the unique index) and, once it commits, arms nothing.
          const arm = (call: string) =>
            sql.withTransaction(
              Effect.gen(function* () {
                const [row] =
                  yield* sql`SELECT svc_topup_arm(${minted.account_id}, ${call}, ${Date.now()}) AS id`
                yield* Effect.sleep("300 millis")
                return row!.id as string | null
              })
            )
          const armed = yield* Effect.orDie(
            Effect.all([arm("rcpt_raceA"), arm("rcpt_raceB")], { concurrency: 2 })
          )
          assert.strictEqual(armed.filter((id) => id !== null).length, 1, JSON.stringify(armed))
          const rows = yield* ledger(minted.account_id)
          assert.strictEqual(rows.topups.filter((row) => row.state === "pending").length, 1)
        })
    )
  })
})
