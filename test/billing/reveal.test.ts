import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { pay, startCheckout } from "./support.ts"

const freshIp = ipSequence("10.92")
const shownKey = /<pre id="api-key"[^>]*>(svc_[0-9A-Za-z]{32})<\/pre>/

/** `POST /upgrade` as the pack picker's form sends it: the checkout's address (its session id is the last part). */
const fromUpgradePage = (app: TestApp["Service"], body: string, ip: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${app.url}/upgrade`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip },
      body,
      redirect: "manual"
    })
    await response.arrayBuffer()
    if (response.status !== 303) throw new Error(`POST /upgrade: ${response.status}`)
    const checkoutUrl = response.headers.get("location")!
    return { checkout_url: checkoutUrl, session_id: checkoutUrl.split("/").pop()! }
  })

const pageOf = (app: TestApp["Service"], checkoutUrl: string): Effect.Effect<Reply> =>
  app.call(new URL(checkoutUrl).pathname)

/** The page's words without markup, as a person reads them. */
const wordsOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, "")
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")

/**
 * A keyless checkout's new key goes to whoever started the checkout (decisions, "Checkout and
 * portal"): a program that called `POST /v1/checkout` reads it from `GET /v1/checkout/{session_id}`,
 * a person who used the `/upgrade` page sees it on the page after payment. Never both, once.
 */
describe(`who is shown a keyless checkout's key (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "started through the API: the page after payment does not show it; the first GET does, once",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const started = yield* startCheckout(app, { pack: "flex" }, { ip })
          const open = yield* pageOf(app, started.checkout_url)
          assert.include(wordsOf(open.body), "goes to the program that started this checkout")
          assert.notInclude(wordsOf(open.body), "the next page shows the new account's key")
          yield* pay(app, started.checkout_url)
          // The person who paid opens the page first: no key there, and the page says where it went.
          for (let view = 0; view < 2; view++) {
            const page = yield* pageOf(app, started.checkout_url)
            assert.strictEqual(page.status, 200)
            assert.include(page.body, "Payment received")
            assert.isNull(shownKey.exec(page.body), page.body)
            assert.notInclude(page.body, 'id="api-key"')
            assert.include(wordsOf(page.body), "went to the program that started this checkout")
            assert.notInclude(wordsOf(page.body), "keeps working")
          }
          const first = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(first.body.status, "paid")
          assert.match(first.body.api_key, /^svc_[0-9A-Za-z]{32}$/)
          const second = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.isUndefined(second.body.api_key)
          assert.strictEqual(second.body.account_id, first.body.account_id)
          const after = yield* pageOf(app, started.checkout_url)
          assert.notInclude(after.body, first.body.api_key)
          const usage = yield* app.call("/v1/usage", { key: first.body.api_key, ip })
          assert.strictEqual(usage.body.account_id, first.body.account_id)
          assert.strictEqual(usage.body.balance.purchased, 10_000)
        })
    )

    it.effect("started from /upgrade: the API read does not show it; the page after payment does, once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const started = yield* fromUpgradePage(app, "pack=flex", ip)
        const open = yield* pageOf(app, started.checkout_url)
        assert.include(wordsOf(open.body), "the next page shows the new account's key once")
        yield* pay(app, started.checkout_url)
        // A program holding the session id asks first: it gets the account, not the key.
        for (let read = 0; read < 2; read++) {
          const status = yield* app.call(`/v1/checkout/${started.session_id}`)
          assert.strictEqual(status.status, 200)
          assert.strictEqual(status.body.status, "paid")
          assert.isString(status.body.account_id)
          assert.isUndefined(status.body.api_key, JSON.stringify(status.body))
        }
        const page = yield* pageOf(app, started.checkout_url)
        const shown = shownKey.exec(page.body)
        assert.isNotNull(shown, page.body)
        assert.include(page.body, "Shown once: store it now.")
        const again = yield* pageOf(app, started.checkout_url)
        assert.notInclude(again.body, shown![1]!)
        assert.include(wordsOf(again.body), "is never shown again")
        assert.notInclude(wordsOf(again.body), "GET /v1/checkout")
        const read = yield* app.call(`/v1/checkout/${started.session_id}`)
        assert.isUndefined(read.body.api_key)
        const usage = yield* app.call("/v1/usage", { key: shown![1]!, ip })
        assert.strictEqual(usage.body.account_id, read.body.account_id)
        assert.strictEqual(usage.body.plan, "flex")
      })
    )

    it.effect(
      "a paid checkout with an account says what is true: the key that started it, or the account's keys",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const paidPage = (checkoutUrl: string) =>
            Effect.gen(function* () {
              yield* pay(app, checkoutUrl)
              const page = yield* pageOf(app, checkoutUrl)
              assert.include(page.body, "Payment received")
              assert.notInclude(page.body, 'id="api-key"')
              return wordsOf(page.body)
            })

          const byKey = yield* paidPage(
            (yield* startCheckout(app, { pack: "flex" }, { key, ip })).checkout_url
          )
          assert.include(byKey, "The key that started this checkout keeps working")

          const { management_token } = yield* signIn(app, "reveal-copy@billing.test", { key, ip })
          const byToken = yield* paidPage(
            (yield* startCheckout(app, { pack: "flex", account_id }, { key: management_token, ip }))
              .checkout_url
          )
          assert.notInclude(byToken, "The key that started this checkout")
          assert.include(byToken, "No key started this checkout: it was started with a management token")
          assert.include(byToken, `every key of account ${account_id} keeps working`)

          const byPage = yield* paidPage(
            (yield* fromUpgradePage(app, `pack=flex&account=${account_id}`, ip)).checkout_url
          )
          assert.notInclude(byPage, "The key that started this checkout")
          assert.include(byPage, "No key started this checkout: it named the account on the upgrade page")
          assert.include(byPage, `every key of account ${account_id} keeps working`)
        })
    )
  })
})
