import { assert, describe, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { codeIn, latestMail, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { callbackListener, freePort, MemoryOAuthProvider, skipReason, withChromium } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const appLayer = testApp(testOperations, { port, baseUrl })

const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString()
})

describe(`an MCP client connects with OAuth (${storeName})`, () => {
  it.live(
    "401 discovery, registration, sign-in and consent in Chromium, a charged call, refresh, revoke",
    (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const email = "oauth-person@example.com"
        const ip = "10.77.0.1"
        const callback = yield* Effect.promise(callbackListener)
        const provider = new MemoryOAuthProvider(callback.url, "Test Agent")
        const mcpUrl = new URL(`${baseUrl}/mcp/profnet`)
        const headers = { "x-forwarded-for": ip }

        // 1. No token: the 401's discovery leads to registration and an authorization URL.
        const first = new Client({ name: "oauth-test", version: "1.0.0" })
        const firstTransport = new StreamableHTTPClientTransport(mcpUrl, {
          authProvider: provider,
          requestInit: { headers }
        })
        const refused = yield* Effect.promise(() =>
          first.connect(firstTransport).then(
            () => undefined,
            (e) => e
          )
        )
        assert.instanceOf(refused, UnauthorizedError)
        assert.isDefined(provider.client?.client_id)
        const authorizationUrl = provider.authorizationUrl!
        assert.strictEqual(authorizationUrl.origin, baseUrl)
        assert.strictEqual(authorizationUrl.searchParams.get("code_challenge_method"), "S256")
        assert.strictEqual(authorizationUrl.searchParams.get("resource"), mcpUrl.href)

        // 2. Chromium: the sign-in page, the emailed code, the consent naming client, host, account.
        const readCode = () =>
          Effect.runPromise(latestMail(email).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
        const consentText = yield* Effect.promise(() =>
          withChromium(ip, async (page) => {
            const seen: Array<string> = []
            page.on("console", (m) => seen.push(`console: ${m.text()}`))
            page.on("response", (r) =>
              seen.push(`${r.request().method()} ${r.url()} ${r.status()} ${r.headers().location ?? ""}`)
            )
            await page.goto(authorizationUrl.href)
            assert.match(new URL(page.url()).pathname, /^\/login\/[\w-]+$/)
            await page.getByLabel("Email address").fill(email)
            await page.getByRole("button", { name: "Email me a code" }).click()
            await page.getByLabel("6-digit code").fill(codeIn((await readCode()).text))
            await page.getByRole("button", { name: "Sign in" }).click()
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
            const text = await page.locator("main").innerText()
            await page.getByRole("button", { name: "Connect" }).click()
            await page
              .waitForURL((url) => url.href.startsWith(callback.url), { timeout: 10_000 })
              .catch(async (error) => {
                throw new Error(`${page.url()}: ${seen.join("\n")}`, { cause: error })
              })
            return text
          })
        )
        assert.include(consentText, "Test Agent")
        assert.include(consentText, new URL(callback.url).host)
        assert.include(consentText, email)
        const returned = callback.callbacks.find((query) => query.has("code"))!
        assert.strictEqual(returned.get("iss"), baseUrl)

        // 3. The code for tokens; the MCP call is charged to the new account, its receipt names the app.
        yield* Effect.promise(() => firstTransport.finishAuth(returned))
        const tokens = provider.saved!
        assert.isString(tokens.access_token)
        assert.isString(tokens.refresh_token)
        const client = new Client({ name: "oauth-test", version: "1.0.0" })
        yield* Effect.promise(() =>
          client.connect(
            new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, requestInit: { headers } })
          )
        )
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "testEcho", arguments: { value: "hello", cost: 4 } })
        )
        assert.notStrictEqual(result.isError, true, JSON.stringify(result))
        const receipt = (result.structuredContent as { receipt: { app_id?: string } }).receipt
        yield* Effect.promise(() => client.close())

        const management = yield* signIn(app, email, { ip: "10.77.0.2" })
        assert.strictEqual(management.accounts.length, 1)
        const accountId = management.accounts[0]!.account_id
        assert.strictEqual(management.accounts[0]!.grant_credits, 10_000 - (yield* grantSpent(accountId)))
        const listed = yield* app.call("/v1/apps", { key: management.management_token })
        assert.strictEqual(listed.status, 200, JSON.stringify(listed.body))
        assert.strictEqual(listed.body.account_id, accountId)
        const [connected] = listed.body.apps
        assert.strictEqual(connected.client_name, "Test Agent")
        assert.strictEqual(connected.redirect_host, new URL(callback.url).host)
        assert.deepStrictEqual(connected.mounts, ["/mcp/profnet"])
        const calls = yield* sql<{ account_id: string; key_id: string }>`SELECT account_id, key_id FROM calls`
        assert.deepStrictEqual(
          calls.map((call) => ({ ...call })),
          [{ account_id: accountId, key_id: connected.app_id }]
        )
        // The receipt names the app the call was made through.
        assert.strictEqual(receipt.app_id, connected.app_id)

        // 4. The token is for /mcp/profnet only.
        const elsewhere = yield* app.call("/mcp/forum", {
          method: "POST",
          key: tokens.access_token,
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        })
        assert.strictEqual(elsewhere.status, 401)
        assert.include(elsewhere.headers.get("www-authenticate") ?? "", 'error="invalid_token"')

        // 5. Refresh rotates: the new pair works, the old refresh token does not.
        const clientId = provider.client!.client_id
        const refreshed = yield* Effect.promise(() =>
          fetch(
            `${baseUrl}/oauth/token`,
            form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: clientId })
          ).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
        )
        assert.strictEqual(refreshed.status, 200, JSON.stringify(refreshed.body))
        assert.notStrictEqual(refreshed.body.refresh_token, tokens.refresh_token)
        const reused = yield* Effect.promise(() =>
          fetch(
            `${baseUrl}/oauth/token`,
            form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: clientId })
          ).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
        )
        assert.strictEqual(reused.status, 400)
        assert.strictEqual(reused.body.error, "invalid_grant")

        // 6. Revoke: the access and refresh tokens stop at once.
        const revoked = yield* app.call("/v1/apps/revoke", {
          method: "POST",
          key: management.management_token,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ app_id: connected.app_id })
        })
        assert.strictEqual(revoked.status, 200, JSON.stringify(revoked.body))
        const after = yield* app.call("/mcp/profnet", {
          method: "POST",
          key: refreshed.body.access_token,
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        })
        assert.strictEqual(after.status, 401)
        const refreshAfter = yield* Effect.promise(() =>
          fetch(
            `${baseUrl}/oauth/token`,
            form({
              grant_type: "refresh_token",
              refresh_token: refreshed.body.refresh_token,
              client_id: clientId
            })
          ).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
        )
        assert.strictEqual(refreshAfter.status, 400)
        assert.strictEqual(refreshAfter.body.error, "invalid_grant")
        yield* Effect.promise(callback.close)
      }).pipe(Effect.provide(appLayer)),
    120_000
  )
})

const grantSpent = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ spent: number | string | null }>`SELECT SUM(charged_grant) AS spent FROM calls
      WHERE account_id = ${accountId}`
    return Number(rows[0]?.spent ?? 0)
  }).pipe(Effect.orDie)
