import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { AdminClient } from "../../src/clients/operator-cli/AdminClient.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { Checkout } from "../../src/payments/Checkout.ts"
import { Audit } from "../../src/services/Audit.ts"
import { Keys } from "../../src/services/Keys.ts"
import { buy } from "../billing/support.ts"
import { latestMail, linkTokenIn, post, signIn, spend } from "../identity/support.ts"
import { flows } from "../oauth/flows.ts"
import { freePort, register } from "../oauth/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { eventually } from "../webhooks/support.ts"

const freshIp = ipSequence("10.97")
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const redirectUri = "http://127.0.0.1:9/callback"
const { connect } = flows(baseUrl, redirectUri)

interface Event {
  readonly event_id: string
  readonly at: string
  readonly action: string
  readonly actor: { readonly kind: string; readonly id: string }
  readonly target: string | null
  readonly ip: string | null
}

/** Every event of the token's account, newest first, read page by page. */
const auditOf = (token: string, ip: string, query = "") =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const events: Array<Event> = []
    let cursor: string | null = null
    do {
      const page: Reply = yield* app.call(
        `/v1/audit?limit=100${query}${cursor === null ? "" : `&cursor=${cursor}`}`,
        { key: token, ip }
      )
      assert.strictEqual(page.status, 200, JSON.stringify(page.body))
      events.push(...(page.body.events as Array<Event>))
      cursor = page.body.next_cursor
    } while (cursor !== null)
    return events
  })

/** `[action, actor kind, actor id, target, ip]` of each event, oldest first: what a test compares. */
const lines = (events: ReadonlyArray<Event>) =>
  [...events]
    .reverse()
    .map((event) => [event.action, event.actor.kind, event.actor.id, event.target, event.ip])

/** A claimed account on `ip`: its first key, and its owner's management token. */
const owner = (email: string, ip = freshIp()) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const minted = yield* app.mint(ip)
    const signedIn = yield* signIn(app, email, { key: minted.key, ip })
    return { app, ip, email, ...minted, token: signedIn.management_token, tokenId: signedIn.token_id }
  })

const ok = (reply: Reply, status = 200) => {
  assert.strictEqual(reply.status, status, JSON.stringify(reply.body))
  return reply.body
}

const auditRows = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ action: string }>`SELECT action FROM audit_events
      WHERE account_id = ${accountId} ORDER BY seq`
    return rows.map((row) => row.action)
  }).pipe(Effect.orDie)

describe(`the audit log (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl, webhookAllowPrivateUrls: true }), {
    timeout: 120_000,
    excludeTestServices: true
  })((it) => {
    it.effect("an owner's changes, each with who made it, on what, and from where; no secret in it", () =>
      Effect.gen(function* () {
        const who = yield* owner("audit-owner@example.com")
        const { app, ip, email, token } = who
        const as = { key: token, ip }
        const created = ok(yield* post(app, "/v1/keys", { label: "ci" }, as), 201)
        ok(yield* post(app, "/v1/keys/update", { key_id: created.key_id, spend_cap_credits: 500 }, as))
        const rotated = ok(yield* post(app, "/v1/keys/rotate", { key_id: created.key_id }, as))
        ok(yield* post(app, "/v1/keys/revoke", { key_id: rotated.key_id }, as))
        // A second revocation changes nothing, and so records nothing.
        ok(yield* post(app, "/v1/keys/revoke", { key_id: rotated.key_id }, as))
        ok(yield* post(app, "/v1/alert", { threshold: 750 }, as))

        // A sub-agent's key, made and revoked by the account's first key (its owner lets it
        // delegate) from another address.
        const firstKeyId = ok(yield* app.call("/v1/keys", as)).keys[0].key_id as string
        ok(yield* post(app, "/v1/keys/update", { key_id: firstKeyId, may_delegate: true }, as))
        const agentIp = freshIp()
        const child = ok(
          yield* post(app, "/v1/keys/child", { spend_cap_credits: 50 }, { key: who.key, ip: agentIp }),
          201
        )
        ok(yield* post(app, "/v1/keys/child/revoke", { key_id: child.key_id }, { key: who.key, ip: agentIp }))

        const hook = ok(
          yield* post(app, "/v1/webhooks", { url: "https://203.0.113.10/svc", events: ["key.created"] }, as),
          201
        )
        ok(yield* post(app, "/v1/webhooks/delete", { webhook_id: hook.webhook_id }, as))

        // A second sign-in from a laptop, whose token the first one revokes.
        const laptopIp = freshIp()
        const laptop = yield* signIn(app, email, { ip: laptopIp })
        ok(yield* post(app, "/v1/auth/tokens/revoke", { token_id: laptop.token_id }, as))

        // Recovery from yet another address: whoever holds the emailed link acts as the owner.
        const lostIp = freshIp()
        ok(yield* post(app, "/v1/recover", { email }, { ip: lostIp }), 202)
        const link = linkTokenIn((yield* latestMail(email)).text, "/recover")
        const rekeyed = ok(yield* post(app, "/v1/rekey", { token: link }, { ip: lostIp }))

        const events = yield* auditOf(token, ip)
        const byEmail = ["email", email] as const
        const [minting, ...changes] = lines(events)
        // The mint made the account's first key: nobody yet, from the minting client's address.
        assert.deepStrictEqual(minting, ["key.created", "service", "svc", minting![3], ip])
        assert.match(String(minting![3]), /^key_/)
        assert.deepStrictEqual(changes, [
          ["signed_in", ...byEmail, who.tokenId, ip],
          ["key.created", ...byEmail, created.key_id, ip],
          ["key.updated", ...byEmail, created.key_id, ip],
          ["key.rotated", ...byEmail, created.key_id, ip],
          ["key.revoked", ...byEmail, rotated.key_id, ip],
          ["alert.set", ...byEmail, "750", ip],
          ["key.updated", ...byEmail, firstKeyId, ip],
          ["child_key.created", "key", child.parent_key_id, child.key_id, agentIp],
          ["child_key.revoked", "key", child.parent_key_id, child.key_id, agentIp],
          ["webhook.created", ...byEmail, hook.webhook_id, ip],
          ["webhook.deleted", ...byEmail, hook.webhook_id, ip],
          ["signed_in", ...byEmail, laptop.token_id, laptopIp],
          ["token.revoked", ...byEmail, laptop.token_id, ip],
          ["account.rekeyed", ...byEmail, rekeyed.key_id, lostIp]
        ])
        for (const event of events) {
          assert.match(event.event_id, /^aud_/)
          assert.isFalse(Number.isNaN(Date.parse(event.at)), event.at)
        }
        const text = JSON.stringify(events)
        for (const secret of [
          who.key,
          token,
          created.key,
          rotated.key,
          child.key,
          hook.secret,
          rekeyed.key,
          link
        ])
          assert.notInclude(text, secret)
        assert.notInclude(text, laptop.management_token)
      })
    )

    it.effect(
      "money: purchases, a renewal, a subscription's end and an automatic top-up are the service's",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("audit-money@example.com")
          const { app, ip, token } = who
          yield* buy(app, "flex", { key: who.key, ip })
          yield* buy(app, "production", { key: who.key, ip })
          const admin = yield* Admin
          yield* Effect.orDie(admin.renew(who.account_id))
          yield* Effect.orDie((yield* Checkout).cancelAtPeriodEnd(who.account_id))
          yield* Effect.orDie(admin.renew(who.account_id))

          ok(
            yield* post(
              app,
              "/v1/topup",
              { pack: "flex", below_credits: 1_000_000, monthly_max_usd_cents: 2_000 },
              { key: token, ip }
            )
          )
          ok(yield* spend(app, who.key, ip, 1))
          const events = yield* eventually(
            auditOf(token, ip),
            (all) => all.some((event) => event.action === "topup.succeeded"),
            "the top-up's event"
          )
          const purchases = events.filter((event) => event.action === "credits.purchased")
          // flex, production, one renewal and the top-up's pack.
          assert.strictEqual(purchases.length, 4)
          for (const purchase of purchases) assert.match(purchase.target!, /^pur_/)
          const [topup] = events.filter((event) => event.action === "topup.succeeded")
          assert.match(topup!.target!, /^topup_/)
          assert.deepStrictEqual(topup!.actor, { kind: "service", id: "svc" })
          assert.isNull(topup!.ip, "the worker paid it: no request")
          // Arming authorised card charges: the owner's, from where it was done, with its pack.
          const [armed] = events.filter((event) => event.action === "topup.armed")
          assert.deepInclude(armed!, { target: "flex", actor: { kind: "email", id: who.email }, ip })
          ok(yield* post(app, "/v1/topup", { enabled: false }, { key: token, ip }))
          // Disarming what is no longer armed changes nothing, and so records nothing.
          ok(yield* post(app, "/v1/topup", { enabled: false }, { key: token, ip }))
          const disarmed = (yield* auditOf(token, ip)).filter((event) => event.action === "topup.disarmed")
          assert.deepStrictEqual(
            disarmed.map((event) => [event.target, event.actor, event.ip]),
            [[null, { kind: "email", id: who.email }, ip]]
          )
          const renewed = events.find((event) => event.action === "subscription.renewed")!
          const ended = events.find((event) => event.action === "subscription.ended")!
          assert.deepInclude(renewed, { target: "production", actor: { kind: "service", id: "svc" } })
          assert.deepInclude(ended, { target: "production", actor: { kind: "service", id: "svc" } })
          // A keyless checkout: the account, its purchase and its key (made when first read), nobody's.
          const keyless = yield* buy(app, "flex", { ip })
          assert.isString(keyless.read.api_key)
          assert.deepStrictEqual(yield* auditRows(keyless.read.account_id), [
            "credits.purchased",
            "key.created"
          ])
          // The checkouts were paid from a browser: the payer's address, no identity.
          assert.deepInclude(purchases.at(-1)!, { actor: { kind: "service", id: "svc" } })
        })
    )

    it.effect("the operator's credit, plan, entitlements and suspension are the operator's", () =>
      Effect.gen(function* () {
        const who = yield* owner("audit-operator@example.com")
        const admin = yield* Admin
        yield* Effect.orDie(admin.credit(who.account_id, 500, "grant", "support"))
        yield* Effect.orDie(admin.setPlan(who.account_id, "flex"))
        yield* Effect.orDie(admin.entitle(who.account_id, ["forum", "profnet"]))
        yield* Effect.orDie(admin.setState(who.account_id, "suspended"))
        yield* Effect.orDie(admin.setState(who.account_id, "active"))
        // An unknown account changes nothing and records nothing.
        yield* Effect.orDie(admin.setPlan("acct_nobody", "flex"))
        // Through the operator's RPC (as `svc admin` calls it): the operator, from where it called.
        const app = yield* TestApp
        yield* Effect.gen(function* () {
          yield* (yield* AdminClient).credit({ accountId: who.account_id, credits: 7, kind: "balance" })
        }).pipe(
          Effect.provide(AdminClient.layerFor(app.url, "test-admin-token-7f3a9c2e5b8d1f4a6c")),
          Effect.orDie
        )
        const operator = ["operator", "operator"] as const
        const events = yield* auditOf(who.token, who.ip)
        assert.deepStrictEqual(lines(events).slice(2), [
          ["operator.credit", ...operator, "500 grant", null],
          ["operator.plan", ...operator, "flex", null],
          ["operator.entitle", ...operator, "forum,profnet", null],
          ["operator.suspend", ...operator, "suspended", null],
          ["operator.reinstate", ...operator, "active", null],
          ["operator.credit", ...operator, "7 balance", "127.0.0.1"]
        ])
      })
    )

    it.effect("an app connected by consent and disconnected by the owner", () =>
      Effect.gen(function* () {
        const email = "audit-app@example.com"
        const ip = freshIp()
        const clientId = yield* Effect.promise(() => register(baseUrl, redirectUri, "Audit Agent"))
        yield* connect({ email, ip, clientId })
        const token = (yield* signIn(yield* TestApp, email, { ip })).management_token
        const app = yield* TestApp
        const apps = ok(yield* app.call("/v1/apps", { key: token, ip }))
        const appId = apps.apps[0].app_id as string
        ok(yield* post(app, "/v1/apps/revoke", { app_id: appId }, { key: token, ip }))
        const events = yield* auditOf(token, ip)
        const rows = lines(events).filter(([action]) => String(action).startsWith("app."))
        assert.deepStrictEqual(rows, [
          ["app.connected", "email", email, appId, ip],
          ["app.revoked", "email", email, appId, ip]
        ])
      })
    )

    it.effect("pages newest first with a cursor, none missed or repeated; limits and cursors checked", () =>
      Effect.gen(function* () {
        const who = yield* owner("audit-pages@example.com")
        const { app, ip, token } = who
        for (let n = 0; n < 6; n++)
          ok(yield* post(app, "/v1/alert", { threshold: 100 + n }, { key: token, ip }))
        const all = yield* auditOf(token, ip)
        assert.strictEqual(all.length, 8)
        assert.deepStrictEqual(
          all.slice(0, 6).map((event) => event.target),
          ["105", "104", "103", "102", "101", "100"],
          "newest first"
        )
        const paged: Array<Event> = []
        let cursor: string | null = null
        let pages = 0
        do {
          const page: Reply = yield* app.call(
            `/v1/audit?limit=3${cursor === null ? "" : `&cursor=${cursor}`}`,
            {
              key: token,
              ip
            }
          )
          const body = ok(page)
          assert.strictEqual(body.account_id, who.account_id)
          assert.isAtMost(body.events.length, 3)
          paged.push(...body.events)
          cursor = body.next_cursor
          pages++
        } while (cursor !== null)
        assert.strictEqual(pages, 3)
        assert.deepStrictEqual(
          paged.map((event) => event.event_id),
          all.map((event) => event.event_id)
        )

        for (const [query, param] of [
          ["limit=0", "limit"],
          ["limit=101", "limit"],
          ["limit=ten", "limit"],
          ["cursor=aud_", "cursor"],
          ["cursor=rcpt_1", "cursor"],
          ["cursor=aud_zzzzzzzzzzzzz", "cursor"]
        ] as const) {
          const refused = yield* app.call(`/v1/audit?${query}`, { key: token, ip })
          assert.strictEqual(refused.status, 400, `${query}: ${JSON.stringify(refused.body)}`)
          assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(refused.body.code, "INVALID_INPUT", query)
          assert.strictEqual(refused.body.param, param, query)
        }
      })
    )

    it.effect("only the management token of the account's owner reads it", () =>
      Effect.gen(function* () {
        const mine = yield* owner("audit-mine@example.com")
        const theirs = yield* owner("audit-theirs@example.com")
        const app = yield* TestApp
        ok(yield* post(app, "/v1/alert", { threshold: 9 }, { key: theirs.token, ip: theirs.ip }))

        const foreign = yield* app.call(`/v1/audit?account_id=${theirs.account_id}`, {
          key: mine.token,
          ip: mine.ip
        })
        assert.strictEqual(foreign.status, 401, JSON.stringify(foreign.body))
        assert.strictEqual(foreign.body.code, "AUTH_REQUIRED")
        assert.notInclude(JSON.stringify(foreign.body), "alert.set")
        const own = yield* auditOf(mine.token, mine.ip)
        assert.isTrue(own.every((event) => event.target !== "9" && event.actor.id !== theirs.email))

        // Audit 2: a cursor is the account's own. Another account's (or one forged from the
        // service's event numbering) is refused, and shows nothing of the other log.
        for (let n = 0; n < 3; n++)
          ok(yield* post(app, "/v1/alert", { threshold: 10 + n }, { key: theirs.token, ip: theirs.ip }))
        const page = ok(yield* app.call("/v1/audit?limit=1", { key: theirs.token, ip: theirs.ip }))
        assert.isString(page.next_cursor)
        assert.strictEqual(
          page.next_cursor,
          page.events[0].event_id,
          "opaque: an event's own id, no position"
        )
        ok(
          yield* app.call(`/v1/audit?limit=1&cursor=${page.next_cursor}`, {
            key: theirs.token,
            ip: theirs.ip
          })
        )
        for (const cursor of [page.next_cursor, "aud_1", "aud_z"]) {
          const forged = yield* app.call(`/v1/audit?cursor=${cursor}`, { key: mine.token, ip: mine.ip })
          assert.strictEqual(forged.status, 400, JSON.stringify(forged.body))
          assert.strictEqual(forged.body.code, "INVALID_INPUT")
          assert.strictEqual(forged.body.param, "cursor")
          assert.notInclude(JSON.stringify(forged.body), "alert.set")
        }

        for (const [key, code] of [
          [undefined, "AUTH_REQUIRED"],
          [mine.key, "AUTH_REQUIRED"],
          [`svcm_${"x".repeat(32)}`, "UNAUTHORIZED"]
        ] as const) {
          const refused = yield* app.call("/v1/audit", { ...(key === undefined ? {} : { key }), ip: mine.ip })
          assert.strictEqual(refused.status, 401, JSON.stringify(refused.body))
          assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(refused.body.code, code)
        }
      })
    )

    it.effect(
      "written in the change's transaction: a change rolled back leaves no row, a row refused stops the change",
      () =>
        Effect.gen(function* () {
          const who = yield* owner("audit-rollback@example.com")
          const sql = yield* SqlClient.SqlClient
          const keys = yield* Keys
          const before = yield* auditRows(who.account_id)
          const listed = yield* Effect.orDie(keys.list(who.account_id))
          const keyId = listed[0]!.key_id

          // The revocation runs, then its caller's transaction fails: neither the key nor the log changed.
          const failed = yield* Effect.exit(
            sql.withTransaction(
              Effect.andThen(keys.revoke(who.account_id, keyId), Effect.fail("the caller failed"))
            )
          )
          assert.strictEqual(failed._tag, "Failure")
          assert.deepStrictEqual(yield* auditRows(who.account_id), before)
          assert.isNull((yield* Effect.orDie(keys.list(who.account_id)))[0]!.revoked_at)

          // The log refuses the row: the revocation it records does not happen either.
          yield* Effect.orDie(
            sql`CREATE OR REPLACE FUNCTION audit_refuse_test() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'audit row refused'; END $$`
          )
          yield* Effect.orDie(
            sql`CREATE TRIGGER audit_refuse_test BEFORE INSERT ON audit_events FOR EACH ROW
            WHEN (NEW.target = ${sql.literal(`'${keyId}'`)}) EXECUTE FUNCTION audit_refuse_test()`
          )
          const refused = yield* Effect.exit(keys.revoke(who.account_id, keyId))
          yield* Effect.orDie(sql`DROP TRIGGER audit_refuse_test ON audit_events`)
          assert.strictEqual(refused._tag, "Failure")
          assert.isNull((yield* Effect.orDie(keys.list(who.account_id)))[0]!.revoked_at)
          assert.deepStrictEqual(yield* auditRows(who.account_id), before)

          // And when both commit, both are there.
          yield* Effect.orDie(keys.revoke(who.account_id, keyId))
          assert.deepStrictEqual(yield* auditRows(who.account_id), [...before, "key.revoked"])

          // The service's own record joins the caller's transaction the same way.
          const audit = yield* Audit
          const rolled = yield* Effect.exit(
            sql.withTransaction(
              Effect.andThen(audit.record(who.account_id, "alert.set", "1"), Effect.fail("the change failed"))
            )
          )
          assert.strictEqual(rolled._tag, "Failure")
          assert.deepStrictEqual(yield* auditRows(who.account_id), [...before, "key.revoked"])
        })
    )
  })
})
