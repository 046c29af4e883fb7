import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { checkoutPage } from "../../src/surfaces/http/checkout/pages.ts"
import { upgradePage } from "../../src/surfaces/http/pages/upgrade.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const form = "application/x-www-form-urlencoded"
const base = { baseUrl: "http://svc.test", policy: defaultPolicy }
const flex = defaultPolicy.packs.find((pack) => pack.pack === "flex")!

describe("the money pages as markup", () => {
  it("with two rails each pack's form offers both, labelled, the first chosen; with one rail none", () => {
    const two = upgradePage({ ...base, checkoutRails: ["local", "stripe"] }, "acct_x")
    for (const pack of ["flex", "production"]) {
      for (const rail of ["local", "stripe"]) {
        assert.include(two, `<label for="rail-${pack}-${rail}"><input type="radio" id="rail-${pack}-${rail}"`)
      }
      assert.include(two, `id="rail-${pack}-local" name="rail" value="local" checked`)
    }
    assert.include(two, "Card, through Stripe")
    assert.strictEqual(two.match(/<legend>Pay with<\/legend>/g)?.length, 2)
    const one = upgradePage({ ...base, checkoutRails: ["local"] }, undefined)
    assert.notInclude(one, 'name="rail"')
    assert.notInclude(one, 'name="account"')
  })

  it("an account in ?account= is escaped wherever it is written", () => {
    const page = upgradePage({ ...base, checkoutRails: ["local"] }, `acct_"><script>`)
    assert.notInclude(page, "<script>")
    assert.include(page, 'value="acct_&quot;&gt;&lt;script&gt;"')
  })

  it("an open Stripe session waits for the payment confirmation, with a link to check again", () => {
    const token = `cs_${"A".repeat(43)}`
    const view = {
      id: "chk_1",
      status: "open" as const,
      pack: flex,
      rail: "stripe",
      accountId: "acct_1",
      origin: "spend_key" as const,
      expiresAt: Date.UTC(2026, 10, 24, 12, 0)
    }
    const waiting = checkoutPage(base, token, view, undefined)
    assert.include(waiting, "<h1>Waiting for the payment confirmation</h1>")
    assert.include(waiting, `<a href="http://svc.test/checkout/${token}">Check again</a>`)
    assert.include(waiting, "2026-11-24 12:00 UTC")
    assert.notInclude(waiting, "/pay")
    const local = checkoutPage(base, token, { ...view, rail: "local" }, undefined)
    assert.include(local, `action="http://svc.test/checkout/${token}/pay"`)
  })
})

describe(`the money pages' forms over HTTP (${storeName})`, () => {
  layer(testApp(testOperations, { maxBodyBytes: 1024 }), { timeout: 60_000, excludeTestServices: true })(
    (it) => {
      it.effect("POST /upgrade: unknown pack or rail 400 on the picker, refused forms, a 303 otherwise", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.78.0.1"
          const upgrade = (body: string, headers: Record<string, string> = {}) =>
            app.call("/upgrade", { method: "POST", headers: { "content-type": form, ...headers }, body, ip })
          const badPack = yield* upgrade("pack=huge")
          assert.strictEqual(badPack.status, 400)
          assert.include(badPack.body, "Unknown pack")
          assert.include(badPack.body, "<h1>Credit packs</h1>")
          const badRail = yield* upgrade("pack=flex&rail=stripe")
          assert.strictEqual(badRail.status, 400)
          assert.include(badRail.body, "The rail &quot;stripe&quot; is not offered here")
          const unknown = yield* upgrade("pack=flex&account=acct_nobody")
          assert.strictEqual(unknown.status, 404)
          assert.include(unknown.body, "There is no account <code>acct_nobody</code> here")
          assert.strictEqual((yield* upgrade("pack=flex", { "sec-fetch-site": "cross-site" })).status, 403)
          assert.strictEqual((yield* upgrade(`pack=flex&x=${"a".repeat(2000)}`)).status, 413)
          const json = yield* app.call("/upgrade", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: '{"pack":"flex"}',
            ip
          })
          assert.strictEqual(json.status, 415)

          const { account_id } = yield* app.mint(ip)
          const started = yield* Effect.promise(() =>
            fetch(`${app.url}/upgrade`, {
              method: "POST",
              headers: { "content-type": form, "x-forwarded-for": ip },
              body: `pack=production&account=${account_id}`,
              redirect: "manual"
            })
          )
          assert.strictEqual(started.status, 303)
          assert.match(
            started.headers.get("location") ?? "",
            /^http:\/\/svc\.test\/checkout\/cs_[0-9A-Za-z]{43}$/
          )
          const page = yield* app.call(new URL(started.headers.get("location")!).pathname)
          assert.strictEqual(page.status, 200)
          assert.include(page.body, "production: $99.00 a month for 75,000 credits a month")
          assert.strictEqual(page.headers.get("cache-control"), "no-store")
          assert.include(page.headers.get("content-security-policy") ?? "", "form-action 'self'")
        })
      )

      it.effect("portal: a missing, malformed or unknown session is 404 on the page and on cancel", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.78.0.2"
          for (const path of ["/portal", "/portal?session=nope", `/portal?session=${"A".repeat(43)}`]) {
            const reply = yield* app.call(path, { ip })
            assert.strictEqual(reply.status, 404, path)
            assert.include(reply.body, "Ask for a new one")
          }
          const cancel = yield* app.call("/portal/cancel", {
            method: "POST",
            headers: { "content-type": form },
            body: `session=${"A".repeat(43)}`,
            ip
          })
          assert.strictEqual(cancel.status, 404)
          const pay = yield* app.call(`/checkout/cs_${"A".repeat(43)}/pay`, {
            method: "POST",
            headers: { "content-type": form },
            body: "",
            ip
          })
          assert.strictEqual(pay.status, 404)
          assert.include(pay.body, "No open checkout has this address")
        })
      )
    }
  )
})
