import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { appInstance, TestApp, testApp } from "../support/app.ts"
import { freshDatabase, storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.81")

/** A claimed account on a paid plan with `credits`, its owner's management token, and its first key. */
const owned = (email: string, credits: number) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    const owner = yield* signIn(app, email, { key: minted.key, ip })
    yield* admin.setPlan(minted.account_id, "flex")
    yield* admin.credit(minted.account_id, credits, "balance", "test purchase")
    return { ...minted, ip, token: owner.management_token }
  }).pipe(Effect.orDie)

/** The owner lets the account's first key make child keys (`may_delegate`). */
const delegating = (account: { readonly token: string; readonly ip: string }) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const listed = yield* app.call("/v1/keys", { key: account.token, ip: account.ip })
    const granted = yield* post(
      app,
      "/v1/keys/update",
      { key_id: listed.body.keys[0].key_id, may_delegate: true },
      { key: account.token, ip: account.ip }
    )
    assert.strictEqual(granted.status, 200, JSON.stringify(granted.body))
  })

const echo = (app: TestApp["Service"], key: string, ip: string, cost: number, idempotencyKey: string) =>
  app.call(`/v1/profnet/test-echo?value=v&cost=${cost}`, { key, ip, idempotencyKey })

const spentBy = (keyId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ n: unknown }>`SELECT COALESCE(SUM(charged), 0) AS n FROM calls
      WHERE key_id = ${keyId} AND state = 'settled'`
    return Number(row?.n ?? 0)
  }).pipe(Effect.orDie)

describe(`key limits (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a capped key: KEY_CAP as INSUFFICIENT_CREDITS with what is left, nothing charged; raise it and resume",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const account = yield* owned("cap-owner@example.com", 1000)
          const created = yield* post(
            app,
            "/v1/keys",
            { label: "capped", spend_cap_credits: 10, cap_period: "total" },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(created.status, 201, JSON.stringify(created.body))
          assert.strictEqual(created.body.spend_cap_credits, 10)
          const key = created.body.key as string

          const first = yield* echo(app, key, account.ip, 4, "cap-call-0001")
          assert.strictEqual(first.status, 200, JSON.stringify(first.body))
          assert.strictEqual(first.headers.get("key-cap-remaining"), "6")
          assert.strictEqual(first.headers.get("credits-charged"), "4")
          // The claim earned the grant: 10,000 beside the 1,000 bought.
          assert.strictEqual(first.headers.get("credits-remaining"), String(10_000 + 1000 - 4))
          assert.match(first.headers.get("ratelimit-policy") ?? "", /^"flex";q=120;w=60$/)
          assert.match(first.headers.get("ratelimit") ?? "", /^"flex";r=\d+;t=\d+$/)
          assert.strictEqual((yield* echo(app, key, account.ip, 4, "cap-call-0002")).status, 200)

          const over = yield* echo(app, key, account.ip, 4, "cap-call-0003")
          assert.strictEqual(over.status, 402, JSON.stringify(over.body))
          assert.strictEqual(over.body.code, "INSUFFICIENT_CREDITS")
          assert.strictEqual(over.body.limit, "key_cap")
          assert.strictEqual(over.body.credits_available, 2)
          assert.strictEqual(over.body.offer.resume.action, "retry_same_idempotency_key")
          assert.isUndefined(over.body.cap_resets_at, "a total cap never resets")
          assert.isNotNull(over.headers.get("ratelimit"))
          assert.isNull(over.headers.get("credits-charged"))
          assert.strictEqual(yield* spentBy(created.body.key_id), 8)

          const listed = yield* app.call("/v1/keys", { key: account.token, ip: account.ip })
          const row = listed.body.keys.find((k: { key_id: string }) => k.key_id === created.body.key_id)
          assert.strictEqual(row.spent_in_period, 8)

          const raised = yield* post(
            app,
            "/v1/keys/update",
            { key_id: created.body.key_id, spend_cap_credits: 20 },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(raised.status, 200, JSON.stringify(raised.body))
          assert.strictEqual(raised.body.spent_in_period, 8)
          const resumed = yield* echo(app, key, account.ip, 4, "cap-call-0003")
          assert.strictEqual(resumed.status, 200, JSON.stringify(resumed.body))
          assert.strictEqual(resumed.headers.get("key-cap-remaining"), "8")
        })
    )

    it.effect("a day cap says when it resets; the cap counts what the key spent before it was set", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const account = yield* owned("day-cap@example.com", 1000)
        assert.strictEqual((yield* echo(app, account.key, account.ip, 5, "day-cap-000001")).status, 200)
        const keys = yield* app.call("/v1/keys", { key: account.token, ip: account.ip })
        const keyId = keys.body.keys[0].key_id as string
        const capped = yield* post(
          app,
          "/v1/keys/update",
          { key_id: keyId, spend_cap_credits: 7, cap_period: "day" },
          { key: account.token, ip: account.ip }
        )
        assert.strictEqual(capped.body.spent_in_period, 5)
        const tomorrow = new Date(Math.floor(Date.now() / 86_400_000 + 1) * 86_400_000).toISOString()
        assert.strictEqual(capped.body.cap_resets_at, tomorrow)
        const over = yield* echo(app, account.key, account.ip, 3, "day-cap-000002")
        assert.strictEqual(over.body.limit, "key_cap")
        assert.strictEqual(over.body.credits_available, 2)
        assert.strictEqual(over.body.cap_resets_at, tomorrow)
      })
    )

    it.effect(
      "platforms: another platform is NOT_ENTITLED; bad limits are INVALID_INPUT naming the field",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const account = yield* owned("platforms@example.com", 1000)
          const forumOnly = yield* post(
            app,
            "/v1/keys",
            { label: "forum", platforms: ["forum"] },
            { key: account.token, ip: account.ip }
          )
          assert.deepStrictEqual(forumOnly.body.platforms, ["forum"])
          const refused = yield* echo(app, forumOnly.body.key, account.ip, 1, "platform-00001")
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "NOT_ENTITLED")
          assert.deepStrictEqual(refused.body.entitled, ["forum"])
          const forumCall = yield* app.call("/v1/forum/test-echo?value=v&cost=1", {
            key: forumOnly.body.key,
            ip: account.ip,
            idempotencyKey: "platform-00002"
          })
          assert.strictEqual(forumCall.status, 200, JSON.stringify(forumCall.body))
          const usage = yield* app.call("/v1/usage", { key: forumOnly.body.key, ip: account.ip })
          assert.deepStrictEqual(usage.body.platforms, ["forum"])

          for (const [body, param] of [
            [{ platforms: [] }, "platforms"],
            [{ spend_cap_credits: 0 }, "spend_cap_credits"],
            [{ cap_period: "week" }, "cap_period"]
          ] as const) {
            const bad = yield* post(app, "/v1/keys", body, { key: account.token, ip: account.ip })
            assert.strictEqual(bad.status, 400, JSON.stringify(body))
            assert.strictEqual(bad.body.code, "INVALID_INPUT")
            assert.strictEqual(bad.body.param, param, JSON.stringify(bad.body))
          }
        })
    )

    it.effect("child keys: inside the parent's limits, counted on the parent's cap, revoked with it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const account = yield* owned("parent@example.com", 1000)
        const parent = yield* post(
          app,
          "/v1/keys",
          { label: "agent", spend_cap_credits: 30, platforms: ["profnet"], may_delegate: true },
          { key: account.token, ip: account.ip }
        )
        const parentKey = parent.body.key as string
        const tooBig = yield* post(
          app,
          "/v1/keys/child",
          { spend_cap_credits: 31 },
          { key: parentKey, ip: account.ip }
        )
        assert.strictEqual(tooBig.status, 400)
        assert.strictEqual(tooBig.body.param, "spend_cap_credits")
        const widened = yield* post(
          app,
          "/v1/keys/child",
          { spend_cap_credits: 5, platforms: ["forum"] },
          { key: parentKey, ip: account.ip }
        )
        assert.strictEqual(widened.body.param, "platforms")
        const noCap = yield* post(app, "/v1/keys/child", { label: "x" }, { key: parentKey, ip: account.ip })
        assert.strictEqual(noCap.status, 400)
        assert.strictEqual(noCap.body.param, "spend_cap_credits")

        const child = yield* post(
          app,
          "/v1/keys/child",
          { label: "sub-agent", spend_cap_credits: 10, cap_period: "day" },
          { key: parentKey, ip: account.ip }
        )
        assert.strictEqual(child.status, 201, JSON.stringify(child.body))
        assert.strictEqual(child.body.parent_key_id, parent.body.key_id)
        assert.deepStrictEqual(child.body.platforms, ["profnet"])
        const childKey = child.body.key as string

        const grandchild = yield* post(
          app,
          "/v1/keys/child",
          { spend_cap_credits: 1 },
          { key: childKey, ip: account.ip }
        )
        assert.strictEqual(grandchild.status, 403)
        assert.strictEqual(grandchild.body.code, "NOT_ENTITLED")
        const byToken = yield* post(
          app,
          "/v1/keys/child",
          { spend_cap_credits: 1 },
          { key: account.token, ip: account.ip }
        )
        assert.strictEqual(byToken.status, 403)
        assert.strictEqual(byToken.body.code, "NOT_ENTITLED")

        assert.strictEqual((yield* echo(app, childKey, account.ip, 8, "child-call-0001")).status, 200)
        const childOver = yield* echo(app, childKey, account.ip, 4, "child-call-0002")
        assert.strictEqual(childOver.body.limit, "key_cap")
        assert.strictEqual(childOver.body.credits_available, 2)
        // The child's 8 count on the parent's 30: 22 left there.
        const parentOver = yield* echo(app, parentKey, account.ip, 23, "child-call-0003")
        assert.strictEqual(parentOver.body.limit, "key_cap")
        assert.strictEqual(parentOver.body.credits_available, 22)

        const listed = yield* app.call("/v1/keys/children", { key: parentKey, ip: account.ip })
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(
          listed.body.keys.map((k: { key_id: string }) => k.key_id),
          [child.body.key_id]
        )
        assert.strictEqual(listed.body.keys[0].spent_in_period, 8)

        const revoked = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: parent.body.key_id },
          { key: account.token, ip: account.ip }
        )
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual((yield* app.call("/v1/usage", { key: childKey, ip: account.ip })).status, 401)
      })
    )

    it.effect("a child revoked by its parent stops at once; another key's child is NOT_FOUND", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const account = yield* owned("revoke-child@example.com", 100)
        yield* delegating(account)
        const child = yield* post(
          app,
          "/v1/keys/child",
          { spend_cap_credits: 3 },
          { key: account.key, ip: account.ip }
        )
        assert.strictEqual(child.status, 201, JSON.stringify(child.body))
        const other = yield* owned("other-parent@example.com", 100)
        yield* delegating(other)
        const foreign = yield* post(
          app,
          "/v1/keys/child/revoke",
          { key_id: child.body.key_id },
          { key: other.key, ip: other.ip }
        )
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.body.param, "key_id")
        const revoked = yield* post(
          app,
          "/v1/keys/child/revoke",
          { key_id: child.body.key_id },
          { key: account.key, ip: account.ip }
        )
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual(
          (yield* app.call("/v1/usage", { key: child.body.key, ip: account.ip })).status,
          401
        )
      })
    )
  })
})

const config = AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"] })

describe(`a cap across instances (${storeName})`, () => {
  layer(freshDatabase.pipe(Layer.provideMerge(config)), { timeout: 120_000, excludeTestServices: true })(
    (it) => {
      it.effect.runIf(storeName === "postgres")(
        "concurrent calls of a capped key on two instances never spend past its cap (PostgreSQL only)",
        () =>
          Effect.gen(function* () {
            const a = yield* appInstance(testOperations)
            const b = yield* appInstance(testOperations)
            const ip = "10.81.200.1"
            const minted = yield* a.client.mint(ip)
            const owner = yield* signIn(a.client, "two-instances-cap@example.com", { key: minted.key, ip })
            const admin = Context.get(a.built, Admin)
            yield* Effect.orDie(admin.setPlan(minted.account_id, "production"))
            yield* Effect.orDie(admin.credit(minted.account_id, 10_000, "balance", "test purchase"))
            const capped = yield* post(
              a.client,
              "/v1/keys",
              { label: "race", spend_cap_credits: 50 },
              { key: owner.management_token, ip }
            )
            const key = capped.body.key as string
            // Cache hits and full calls alike (a repeated value is a cached copy), from both instances at once.
            const calls = Array.from({ length: 60 }, (_, n) => ({
              on: n % 2 === 0 ? a.client : b.client,
              path: `/v1/profnet/test-echo?value=v${n % 5}&cost=3`,
              idempotencyKey: `race-call-${String(n).padStart(4, "0")}`
            }))
            const answered = yield* Effect.forEach(
              calls,
              (call) =>
                Effect.gen(function* () {
                  // A call turned away by the one-in-flight rule retries, as a careful client does.
                  for (let attempt = 0; attempt < 50; attempt++) {
                    const reply = yield* call.on.call(call.path, {
                      key,
                      ip,
                      idempotencyKey: call.idempotencyKey
                    })
                    if (reply.body?.code !== "CONCURRENCY_LIMIT") return reply
                    yield* Effect.sleep(5)
                  }
                  return yield* Effect.die("a call never got through")
                }),
              { concurrency: 12 }
            )
            const ok = answered.filter((reply) => reply.status === 200).length
            const capRefused = answered.filter((reply) => reply.body?.limit === "key_cap").length
            assert.strictEqual(ok, 16, "50 credits hold 16 calls of 3")
            assert.strictEqual(capRefused, 44)
            const sql = Context.get(a.built, SqlClient.SqlClient)
            const [spent] = yield* Effect.orDie(
              sql<{ n: unknown }>`SELECT COALESCE(SUM(charged), 0) AS n FROM calls
              WHERE key_id = ${capped.body.key_id} AND state = 'settled'`
            )
            assert.strictEqual(Number(spent?.n), 48)
          })
      )
    }
  )
})
