import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { codeIn, latestMail } from "../identity/support.ts"
import { TestApp } from "../support/app.ts"
import { authorizeUrl, cookieClient, pkce, tokenRequest } from "./support.ts"

/** The OAuth steps the tests repeat, for a service at `baseUrl` and a client's one redirect URI. */
export const flows = (baseUrl: string, redirectUri: string) => {
  const profnet = `${baseUrl}/mcp/profnet`
  /** The whole browser part, through plain requests: authorize, emailed code, consent; the code. */
  const connect = (options: {
    email: string
    ip: string
    clientId: string
    resource?: string
    decision?: "allow" | "deny"
  }) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const browser = cookieClient(baseUrl, options.ip)
      const { verifier, challenge } = pkce()
      const started = yield* Effect.promise(() =>
        browser.request(
          authorizeUrl(baseUrl, {
            response_type: "code",
            client_id: options.clientId,
            redirect_uri: redirectUri,
            code_challenge: challenge,
            code_challenge_method: "S256",
            scope: "mcp",
            state: "s1",
            resource: options.resource ?? profnet
          })
        )
      )
      assert.strictEqual(started.status, 303, started.text)
      const login = new URL(started.location!).pathname
      assert.match(login, /^\/login\/[\w-]+$/)
      const emailed = yield* Effect.promise(() =>
        browser.request(`${login}/email`, { form: { email: options.email } })
      )
      assert.strictEqual(emailed.status, 200, emailed.text)
      const code = codeIn(
        (yield* latestMail(options.email).pipe(Effect.provideService(SqlClient.SqlClient, sql))).text
      )
      const signedIn = yield* Effect.promise(() =>
        browser.request(`${login}/code`, { form: { email: options.email, code } })
      )
      assert.strictEqual(signedIn.status, 303, signedIn.text)
      const consent = yield* Effect.promise(() => browser.request(login))
      assert.strictEqual(consent.status, 200)
      const csrf = /name="csrf" value="([^"]+)"/.exec(consent.text)![1]!
      const accountId = /name="account_id" value="([^"]+)"/.exec(consent.text)![1]!
      let answer = yield* Effect.promise(() =>
        browser.request(`${login}/consent`, {
          form: { csrf, account_id: accountId, decision: options.decision ?? "allow" }
        })
      )
      while (answer.location !== undefined && !answer.location.startsWith(redirectUri)) {
        const next = answer.location
        answer = yield* Effect.promise(() => browser.request(next))
      }
      const back = new URL(answer.location!)
      assert.strictEqual(back.searchParams.get("state"), "s1")
      return {
        code: back.searchParams.get("code")!,
        error: back.searchParams.get("error"),
        verifier,
        accountId,
        browser
      }
    })

  const exchange = (clientId: string, code: string, verifier: string) =>
    Effect.promise(() =>
      tokenRequest(baseUrl, {
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: redirectUri,
        resource: profnet
      })
    )

  const toolsList = (token: string, mount = "/mcp/profnet") =>
    Effect.gen(function* () {
      const app = yield* TestApp
      return yield* app.call(mount, {
        method: "POST",
        key: token,
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
      })
    })

  const callCount = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM calls`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

  return { connect, exchange, toolsList, callCount }
}
