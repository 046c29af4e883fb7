import { readFileSync } from "node:fs"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { Page } from "playwright-core"
import { codeIn, linkTokenIn, post, spend } from "../identity/support.ts"
import { freePort, smtpServer } from "../mail/smtp.ts"
import {
  baseUrl,
  lastStatus,
  type MailReader,
  signInWithCode,
  skipReason,
  withBrowser
} from "../pages/browser.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { checkPage, dashboard, htmlOf, textOf } from "./support.ts"

/**
 * The mail goes out over SMTP, as it does in production: the service's Mailer (SMTP_URL, read at
 * start) delivers to a real SMTP server in this test, and sign-in codes are read from the messages
 * it received, one message per read.
 */
const scope = Effect.runSync(Scope.make())
const port = await Effect.runPromise(freePort)
const sink = await Effect.runPromise(Scope.provide(smtpServer(port), scope))
process.env.SMTP_URL = `smtp://127.0.0.1:${port}`
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const taken = new Map<string, number>()
const nextMail = async (email: string) => {
  for (let attempt = 0; attempt < 400; attempt++) {
    const to = sink.received.filter((mail) => mail.to.includes(email))
    const seen = taken.get(email) ?? 0
    if (to.length > seen) {
      taken.set(email, to.length)
      return { text: to[to.length - 1]!.text ?? "" }
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no mail to ${email} arrived over SMTP`)
}
const mail: MailReader = {
  read: (email) => nextMail(email) as never,
  code: async (email) => codeIn((await nextMail(email)).text),
  link: async (email, path) => linkTokenIn((await nextMail(email)).text, path)
}

/** A sign-in over the API with the code from the SMTP sink: the management token. */
const signIn = (app: TestApp["Service"], email: string, options: { key?: string; ip?: string } = {}) =>
  Effect.gen(function* () {
    const started = yield* post(app, "/v1/auth/email/start", { email }, options)
    assert.strictEqual(started.status, 202)
    const code = codeIn((yield* Effect.promise(() => nextMail(email))).text)
    const verified = yield* post(app, "/v1/auth/email/verify", { email, code }, options)
    assert.strictEqual(verified.status, 200, JSON.stringify(verified.body))
    return verified.body as { management_token: string; accounts: Array<{ account_id: string }> }
  })

/** Runs a test step from the browser's side (plain promises), with the test's database. */
const runner = Effect.map(
  SqlClient.SqlClient,
  (sql) =>
    <A>(effect: Effect.Effect<A, never, SqlClient.SqlClient>) =>
      Effect.runPromise(Effect.provideService(effect, SqlClient.SqlClient, sql))
)

/** The spendable credits the overview shows, as a number. */
const spendable = async (page: Page) => {
  const text =
    (await page.locator(".figure", { hasText: "Spendable credits" }).locator("strong").textContent()) ?? ""
  return Number(text.replace(/,/g, ""))
}

describe(`/dashboard in Chromium (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "sign in, keys (shown once, revoked key fails), a receipt, an alert, a pack, a token revoked; every page at 360 px and desktop passes axe",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const run = yield* runner
          const ip = "10.81.0.1"
          const email = "owner@example.com"
          yield* withBrowser(app.url, { ip }, async (browser) => {
            const { page } = browser
            // The pages' policy admits their inline styles and the copy script, nothing else: no violation.
            const refused: Array<string> = []
            page.on("console", (message) => {
              if (message.text().includes("Content Security Policy")) refused.push(message.text())
            })
            // Not signed in: to /login.
            await page.goto(dashboard())
            assert.strictEqual(new URL(page.url()).pathname, "/login")
            await signInWithCode(page, mail, email)
            // Back where the sign-in was sent from.
            assert.strictEqual(new URL(page.url()).pathname, "/dashboard")
            assert.include(await textOf(page), `Signed in as ${email}`)
            const session = (await browser.context.cookies(baseUrl)).find(
              (cookie) => cookie.name === "svc_session"
            )!

            const overview = await page.goto(dashboard())
            assert.strictEqual(overview?.status(), 200)
            assert.strictEqual(overview?.headers()["cache-control"], "no-store")
            const overviewText = await textOf(page)
            assert.include(overviewText, "Plan")
            assert.include(overviewText, "trial")
            assert.include(overviewText, "Free budget left today")
            const accountId = /acct_\w+/.exec(overviewText)![0]

            // Keys: none yet; create one, shown once with a copy button the CSP lets run.
            await page.goto(dashboard("/keys"))
            assert.include(await textOf(page), "This account has no keys")
            await page.getByLabel("Label (optional)").fill("laptop")
            await page.getByRole("button", { name: "Create key" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys"), 201)
            const first = (await page.locator("#new-key-secret").textContent()) ?? ""
            assert.match(first, /^svc_\w+$/)
            assert.include(await textOf(page), "only time it is shown")
            // The copy button, shown and run by the page's one script (allowed by its hash). Over plain
            // http the Clipboard API is missing and the script selects the text and copies that.
            await page.getByRole("button", { name: "Copy the key" }).click()
            await page.getByRole("button", { name: "Copied" }).waitFor({ timeout: 5_000 })
            const selected = await page.evaluate(() =>
              String((globalThis as unknown as { getSelection: () => unknown }).getSelection())
            )
            assert.strictEqual(selected, first)

            // A call with it, and its receipt on the usage page.
            const call = await run(spend(app, first, ip, 7))
            assert.strictEqual(call.status, 200, JSON.stringify(call.body))
            const receiptId = call.body.receipt.id as string
            await page.goto(dashboard("/usage"))
            const usageText = await textOf(page)
            assert.include(usageText, receiptId)
            assert.include(usageText, "testEcho")
            assert.isTrue(await page.locator("svg[role=img]").isVisible())
            assert.include((await page.locator("table").first().textContent()) ?? "", "profnet")
            // Filters: another day has none; the CSV has the receipt.
            await page.getByLabel("Day (UTC)").fill("2001-01-01")
            await page.getByRole("button", { name: "Filter" }).click()
            assert.include(await textOf(page), "No receipt matches these filters")
            await page.goto(`${dashboard("/usage", accountId)}&operation=testEcho`)
            const [download] = await Promise.all([
              page.waitForEvent("download"),
              page.getByRole("link", { name: "Download these receipts as CSV" }).click()
            ])
            assert.strictEqual(download.suggestedFilename(), `receipts-${accountId}.csv`)
            const csv = readFileSync(await download.path(), "utf8")
            const rows = csv.trim().split("\r\n")
            assert.strictEqual(
              rows[0],
              "receipt_id,created_at,operation,platform,quoted,charged,free_tier,grant,balance,refunded,idempotency_key,signature"
            )
            assert.isTrue(
              rows.some((row) => row.startsWith(`${receiptId},`) && row.includes(",testEcho,profnet,"))
            )

            // Revoke with a confirmation step; the key then fails on /v1/usage.
            await page.goto(dashboard("/keys"))
            await page.getByRole("button", { name: /^Revoke key / }).click()
            assert.include(await textOf(page), "Revoke this key?")
            assert.strictEqual(
              (await run(app.call("/v1/usage", { key: first, ip }))).status,
              200,
              "not yet revoked"
            )
            await page.getByRole("button", { name: "Yes, revoke it" }).click()
            assert.include(await textOf(page), "is revoked")
            assert.strictEqual((await run(app.call("/v1/usage", { key: first, ip }))).status, 401)

            // Rotate: a second key, rotated; only the new secret works.
            await page.getByRole("button", { name: "Create key" }).click()
            const second = (await page.locator("#new-key-secret").textContent()) ?? ""
            await page.goto(dashboard("/keys"))
            await page.getByRole("button", { name: /^Rotate key / }).click()
            await page.getByRole("button", { name: "Yes, rotate it" }).click()
            const rotated = (await page.locator("#new-key-secret").textContent()) ?? ""
            assert.notStrictEqual(rotated, second)
            assert.strictEqual((await run(app.call("/v1/usage", { key: second, ip }))).status, 401)
            assert.strictEqual((await run(app.call("/v1/usage", { key: rotated, ip }))).status, 200)

            // No page shows a secret after its one showing, nor the session's token.
            for (const path of ["", "/usage", "/keys", "/billing", "/tokens"]) {
              await page.goto(dashboard(path))
              const served = await htmlOf(page)
              for (const secret of [first, second, rotated, session.value])
                assert.notInclude(served, secret, `${path || "/"} shows a secret`)
            }

            // Alert.
            await page.goto(dashboard("/billing"))
            await page.getByLabel("Threshold (credits)").fill("500")
            await page.getByRole("button", { name: "Set alert" }).click()
            assert.include(
              await textOf(page),
              `Alert set: we email ${email} when the spendable credits fall below 500`
            )
            await page.goto(dashboard("/billing"))
            assert.include(await textOf(page), "The alert is set at 500 credits.")
            assert.strictEqual(await page.getByLabel("Threshold (credits)").inputValue(), "500")
            await page.getByLabel("Threshold (credits)").fill("-3")
            await page.locator("form:has(#threshold)").evaluate((form) => form.setAttribute("novalidate", ""))
            await page.getByRole("button", { name: "Set alert" }).click()
            assert.strictEqual(lastStatus(browser, "POST", "/dashboard/alert"), 400)
            assert.include(await textOf(page), "The threshold is a whole number")

            // A flex pack on the local rail: the balance moves by its credits.
            await page.goto(dashboard())
            const before = await spendable(page)
            await page.goto(dashboard("/billing"))
            await page.getByRole("button", { name: /^Buy flex/ }).click()
            assert.match(new URL(page.url()).pathname, /^\/checkout\//)
            await page.getByRole("button", { name: /^Pay / }).click()
            await page.goto(dashboard())
            assert.strictEqual(await spendable(page), before + 10_000)
            assert.include(await textOf(page), "flex")

            // The billing portal opens (the local one, for a local-rail account).
            await page.goto(dashboard("/billing"))
            await page.getByRole("button", { name: "Open the billing portal" }).click()
            assert.strictEqual(new URL(page.url()).pathname, "/portal")

            // Management tokens: a command-line sign-in, revoked here, stops working.
            const cli = await run(signIn(app, email, { ip: "10.81.0.2" }))
            assert.strictEqual(
              (await run(app.call("/v1/auth/tokens", { key: cli.management_token, ip }))).status,
              200
            )
            await page.goto(dashboard("/tokens"))
            assert.include(await textOf(page), "(this browser)")
            await page
              .getByRole("button", { name: /^Revoke the / })
              .first()
              .click()
            assert.include(await textOf(page), "That sign-in is revoked")
            assert.strictEqual(
              (await run(app.call("/v1/auth/tokens", { key: cli.management_token, ip }))).status,
              401
            )

            // A connected app (its OAuth flow is test/oauth's; here its record), revoked here.
            await run(
              Effect.flatMap(
                SqlClient.SqlClient,
                (
                  sql
                ) => sql`INSERT INTO oauth_apps (id, account_id, client_id, client_name, redirect_host, mounts, grant_id, created_at)
                  VALUES ('app_dashboardtest', ${accountId}, 'client_dashboardtest', 'Test Agent', '127.0.0.1:4711', '/mcp/profnet', 'grant_dashboardtest', ${Date.now()})`
              ).pipe(Effect.orDie)
            )
            const apps = async () =>
              (await run(app.call(`/v1/apps?account_id=${accountId}`, { key: session.value, ip }))).body
                .apps as Array<{
                app_id: string
              }>
            assert.deepStrictEqual(
              (await apps()).map((listed) => listed.app_id),
              ["app_dashboardtest"]
            )
            await page.goto(dashboard("/apps"))
            assert.include(await textOf(page), "Test Agent")
            await checkPage(page, "apps")
            await page.getByRole("button", { name: "Revoke Test Agent (app_dashboardtest)" }).click()
            assert.include(await textOf(page), "The app is revoked")
            assert.include(await textOf(page), "No app is connected")
            assert.deepStrictEqual(await apps(), [])

            // Every page at phone and desktop widths: screenshots, axe-core, no sideways scroll.
            for (const [name, path] of [
              ["overview", ""],
              ["usage", "/usage"],
              ["keys", "/keys"],
              ["billing", "/billing"],
              ["tokens", "/tokens"]
            ] as const) {
              await page.goto(dashboard(path))
              await checkPage(page, name)
            }
            await page.goto(dashboard("/keys"))
            await page
              .getByRole("button", { name: /^Revoke key / })
              .first()
              .click()
            await checkPage(page, "keys-confirm")
            assert.deepStrictEqual(browser.elsewhere, [])
            assert.deepStrictEqual(refused, [])
          })
        }),
      180_000
    )

    it.effect("several accounts: a switcher, and another account's ids in a form are refused", (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const app = yield* TestApp
        const run = yield* runner
        const ip = "10.81.1.1"
        const email = "two@example.com"
        // A stranger's account and key, claimed so that its key id can be read.
        const stranger = yield* app.mint("10.81.1.9")
        const strangerSignIn = yield* signIn(app, "stranger@example.com", {
          key: stranger.key,
          ip: "10.81.1.9"
        })
        const strangerKeys = yield* app.call("/v1/keys", {
          key: strangerSignIn.management_token,
          ip: "10.81.1.9"
        })
        const strangerKey = Promise.resolve(strangerKeys.body.keys[0].key_id as string)
        yield* withBrowser(app.url, { ip }, async (browser) => {
          const { page } = browser
          await page.goto(`${baseUrl}/login`)
          await signInWithCode(page, mail, email)
          // Claim a trial key with the same email: the sign-in now governs two accounts.
          const trial = await run(app.mint("10.81.1.2"))
          await run(signIn(app, email, { key: trial.key, ip: "10.81.1.2" }))
          await page.goto(dashboard())
          const options = await page.locator("#account-switch option").allInnerTexts()
          assert.strictEqual(options.length, 2)
          await page.getByLabel("Account").selectOption(trial.account_id)
          await page.getByRole("button", { name: "Switch" }).click()
          assert.include(new URL(page.url()).search, `account=${trial.account_id}`)
          await page.goto(dashboard("/keys", trial.account_id))
          assert.include(await textOf(page), trial.key.slice(-4))
          await checkPage(page, "keys-two-accounts")

          // Another account in `?account=` and in a form's hidden field: refused.
          const foreign = await page.goto(dashboard("/keys", stranger.account_id))
          assert.strictEqual(foreign?.status(), 403)
          assert.include(await textOf(page), "does not govern")
          await page.goto(dashboard("/keys", trial.account_id))
          await page
            .locator("form:has(#label) input[name=account]")
            .evaluate((input, id) => input.setAttribute("value", id), stranger.account_id)
          await page.getByRole("button", { name: "Create key" }).click()
          assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys"), 403)
          // Another account's key id under one's own account: not found, nothing revoked.
          await page.goto(dashboard("/keys", trial.account_id))
          const strangerKeyId = await strangerKey
          await page
            .locator("form[action$='/keys/revoke'] input[name=key_id]")
            .first()
            .evaluate((input, id) => input.setAttribute("value", id), strangerKeyId)
          await page
            .getByRole("button", { name: /^Revoke key / })
            .first()
            .click()
          assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys/revoke"), 404)
          assert.include(await textOf(page), "not one of this account's keys")
          assert.strictEqual(
            (await run(app.call("/v1/usage", { key: stranger.key, ip: "10.81.1.9" }))).status,
            200
          )

          // A form whose CSRF field is not the session's: refused.
          await page
            .locator("form:has(#label) input[name=csrf]")
            .evaluate((input) => input.setAttribute("value", "forged"))
          await page.getByRole("button", { name: "Create key" }).click()
          assert.strictEqual(lastStatus(browser, "POST", "/dashboard/keys"), 403)
          assert.include(await textOf(page), "This form does not belong to your current sign-in")
        })
      })
    )
  })
})
