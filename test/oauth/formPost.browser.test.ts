import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { authorizeUrl, freePort, register, skipReason, withChromium } from "./support.ts"

const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`

/** A client's redirect URI that records what reaches it: the method and the form or query. */
const recorder = async () => {
  const seen: Array<{ method: string; fields: string }> = []
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => {
      body += chunk
    })
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        fields: body || new URL(request.url ?? "/", "http://x").search.slice(1)
      })
      response.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/**
 * oidc-provider's `response_mode=form_post` answer is a page whose inline script posts to the
 * client: its policy allows that script and that target, so it still works under the headers every
 * HTML answer carries.
 */
describe(`a form_post answer in Chromium (${storeName})`, () => {
  layer(testApp(testOperations, { port, baseUrl }), { timeout: 60_000 })((it) => {
    it.effect("an error answered with form_post reaches the client as a POST", (context) =>
      Effect.gen(function* () {
        if (skipReason !== undefined) return context.skip(skipReason)
        const callback = yield* Effect.acquireRelease(Effect.promise(recorder), (r) =>
          Effect.promise(r.close)
        )
        const clientId = yield* Effect.promise(() => register(baseUrl, callback.url, "Form Agent"))
        // No PKCE: invalid_request, which goes back to the client in the mode it asked for.
        const url = authorizeUrl(baseUrl, {
          response_type: "code",
          client_id: clientId,
          redirect_uri: callback.url,
          response_mode: "form_post",
          state: "s1"
        })
        const policy = yield* Effect.promise(() =>
          withChromium("10.96.0.1", async (page) => {
            const answer = page.waitForResponse((response) =>
              response.url().startsWith(`${baseUrl}/oauth/authorize`)
            )
            const posted = page.waitForRequest((request) => request.url() === callback.url, {
              timeout: 10_000
            })
            await page.goto(url)
            await posted
            return (await answer).headers()["content-security-policy"] ?? ""
          })
        )
        assert.match(policy, /; script-src 'sha256-[^']+'; /, policy)
        assert.include(policy, `form-action 'self' http://127.0.0.1:`)
        assert.include(policy, "frame-ancestors 'none'")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
        // (The browser also asks the client's origin for its icon, on its own.)
        const posts = callback.seen.filter((request) => request.method === "POST")
        assert.strictEqual(posts.length, 1, JSON.stringify(callback.seen))
        const fields = new URLSearchParams(posts[0]!.fields)
        assert.strictEqual(fields.get("error"), "invalid_request")
        assert.strictEqual(fields.get("state"), "s1")
      }).pipe(Effect.scoped)
    )
  })
})
