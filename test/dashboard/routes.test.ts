import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn, spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const formType = "application/x-www-form-urlencoded"

/** The dashboard over plain HTTP: the guard, receipts paging and filters, the CSV, and form refusals. */
describe(`/dashboard over HTTP (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("not signed in: every page is a redirect to /login, every form is refused", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const path of ["/dashboard", "/dashboard/usage", "/dashboard/keys", "/dashboard/receipts.csv"]) {
          const response = yield* Effect.promise(() => fetch(`${app.url}${path}`, { redirect: "manual" }))
          assert.strictEqual(response.status, 303, path)
          assert.match(response.headers.get("location") ?? "", /\/login\?then=dashboard$/)
        }
        const form = yield* app.call("/dashboard/keys", {
          method: "POST",
          headers: { "content-type": formType },
          body: "csrf=x&account=acct_x&label=y",
          ip: "10.82.0.1"
        })
        assert.strictEqual(form.status, 401)
      })
    )

    it.effect(
      "receipts: 25 a page, older by cursor, filtered by operation and day; the CSV has them all",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.82.1.1"
          const { key } = yield* app.mint(ip)
          const owner = yield* signIn(app, "pager@example.com", { key, ip })
          const cookie = { cookie: `svc_session=${owner.management_token}` }
          const accountId = owner.claimed!
          const ids: Array<string> = []
          for (let i = 0; i < 30; i++) {
            const reply = yield* spend(app, key, ip, 1, {
              idempotencyKey: i === 0 ? "=1+2+3+4+5" : `key-${i}-0000`
            })
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            ids.push(reply.body.receipt.id)
          }
          const page = (query: string) =>
            app.call(`/dashboard/usage?account=${accountId}${query}`, { headers: cookie, ip })
          const first = yield* page("")
          assert.strictEqual(first.status, 200)
          assert.strictEqual(first.headers.get("cache-control"), "no-store")
          const shown = (body: string) => ids.filter((id) => body.includes(`<code>${id}</code>`))
          assert.deepStrictEqual(shown(first.body), ids.slice(5))
          const before = /before=([\w.%-]+)#receipts/.exec(first.body)?.[1]
          assert.isDefined(before)
          const second = yield* page(`&before=${before}`)
          assert.deepStrictEqual(shown(second.body), ids.slice(0, 5))
          assert.notInclude(second.body, "Older receipts")

          const other = yield* page("&operation=nosuchop")
          assert.include(other.body, "There is no such operation")
          const today = new Date().toISOString().slice(0, 10)
          const byDay = yield* page(`&operation=testEcho&date=${today}`)
          assert.strictEqual(shown(byDay.body).length, 25)
          const yesterday = yield* page("&date=2001-02-03")
          assert.include(yesterday.body, "No receipt matches these filters")

          const csv = yield* app.call(`/dashboard/receipts.csv?account=${accountId}`, { headers: cookie, ip })
          assert.strictEqual(csv.status, 200)
          assert.match(
            csv.headers.get("content-disposition") ?? "",
            /^attachment; filename="receipts-acct_\w+\.csv"$/
          )
          const rows = (csv.body as string).trim().split("\r\n")
          assert.strictEqual(rows.length, 31)
          // A spreadsheet formula in a caller's idempotency key is written as text; then the key that spent.
          assert.isTrue(
            rows.some((row) => row.startsWith(`${ids[0]},`) && /,'=1\+2\+3\+4\+5,key_\w+,$/.test(row))
          )
        })
    )

    it.effect("a new account's pages say what to do next", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.82.3.1"
        const owner = yield* signIn(app, "fresh@example.com", { ip })
        const headers = { cookie: `svc_session=${owner.management_token}` }
        const text = (path: string) =>
          Effect.map(app.call(path, { headers, ip }), (reply) => reply.body as string)
        assert.include(yield* text("/dashboard"), "This account has no credits beyond the free budget")
        const usage = yield* text("/dashboard/usage")
        assert.include(usage, "No calls were charged in the last 30 days")
        assert.include(usage, "No receipts yet")
        assert.include(yield* text("/dashboard/keys"), "This account has no keys. Create one below")
        assert.include(yield* text("/dashboard/apps"), "No app is connected")
        assert.include(yield* text("/dashboard/billing"), "This account has bought nothing yet")
        const foreign = yield* app.call("/dashboard?account=acct_someone_else", { headers, ip })
        assert.strictEqual(foreign.status, 403)
        assert.include(foreign.body, "does not govern acct_someone_else")
      })
    )

    it.effect("forms: another site's 403, a non-form 415, a missing CSRF field 403", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.82.2.1"
        const owner = yield* signIn(app, "forms@example.com", { ip })
        const accountId = owner.accounts[0]!.account_id
        const headers = { cookie: `svc_session=${owner.management_token}` }
        const post = (body: string, extra: Record<string, string>) =>
          app.call("/dashboard/alert", { method: "POST", headers: { ...headers, ...extra }, body, ip })
        const cross = yield* post(`account=${accountId}&threshold=5`, {
          "content-type": formType,
          "sec-fetch-site": "cross-site"
        })
        assert.strictEqual(cross.status, 403)
        const json = yield* post(JSON.stringify({ threshold: 5 }), { "content-type": "application/json" })
        assert.strictEqual(json.status, 415)
        const noCsrf = yield* post(`account=${accountId}&threshold=5`, { "content-type": formType })
        assert.strictEqual(noCsrf.status, 403)
        assert.include(noCsrf.body, "This form does not belong to your current sign-in")
      })
    )
  })
})
