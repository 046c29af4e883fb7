import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { links } from "../../src/config.ts"
import { type ErrorCode, errorCatalog } from "../../src/contract/errors.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const baseUrl = "http://svc.test"

type Found = readonly [where: string, url: string, method?: string]

/**
 * Every string in a JSON body that is a link of this service, with where it was found, and the
 * method beside it when the body names one (the `mint` recipe's `POST`).
 */
const linksIn = (body: unknown, at: string, method?: string): Array<Found> =>
  typeof body === "string"
    ? body.startsWith(baseUrl)
      ? [method === undefined ? [at, body] : [at, body, method]]
      : []
    : Array.isArray(body)
      ? body.flatMap((item, index) => linksIn(item, `${at}[${index}]`))
      : typeof body === "object" && body !== null
        ? Object.entries(body).flatMap(([name, value]) =>
            linksIn(value, `${at}.${name}`, "method" in body ? String(body.method) : undefined)
          )
        : []

describe(`every link the API hands out leads somewhere (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("mint, usage, problems and the configured links answer, none with 404", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const mint = yield* app.call("/v1/keys/mint", { method: "POST", ip: "10.7.0.1" })
        const { key } = mint.body
        const usage = yield* app.call("/v1/usage", { key, ip: "10.7.0.1" })
        const trialCap = yield* app.call("/v1/profnet/test-echo?value=x&freshness=realtime", {
          key,
          ip: "10.7.0.1"
        })
        const keyRequired = yield* app.call("/v1/usage")
        const notFound = yield* app.call("/v1/nope")
        const serverCard = yield* app.call("/mcp/server-card")
        const aiCatalog = yield* app.call("/.well-known/ai-catalog.json")
        assert.strictEqual(trialCap.body.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(keyRequired.body.code, "KEY_REQUIRED")

        const link = links(baseUrl)
        const found = [
          ...linksIn(mint.body, "mint"),
          ...linksIn(usage.body, "usage"),
          ...linksIn(trialCap.body, "TRIAL_CAP_EXCEEDED"),
          ...linksIn(keyRequired.body, "KEY_REQUIRED"),
          ...linksIn(notFound.body, "NOT_FOUND"),
          ...linksIn(serverCard.body, "server-card"),
          ...linksIn(aiCatalog.body, "ai-catalog"),
          ...Object.keys(errorCatalog).map((code): Found => [`doc_url of ${code}`, link.errorDoc(code)]),
          ...(["login", "activate", "docs", "openapi", "upgrade", "claim", "mcp"] as const).map(
            (name): Found => [`links.${name}`, link[name]]
          )
        ]
        const at = new Set(found.map(([where]) => where.replace(/\[\d+\]/g, "")))
        for (const expected of [
          "mint.upgrade_url",
          "mint.setup.mcp.url",
          "mint.docs",
          "usage.upgrade_url",
          "usage.claim_url",
          "TRIAL_CAP_EXCEEDED.doc_url",
          "TRIAL_CAP_EXCEEDED.upgrade_url",
          "TRIAL_CAP_EXCEEDED.offer.checkout_url",
          "KEY_REQUIRED.doc_url",
          "server-card.remotes.url",
          "server-card.authentication.schemes.protectedResourceMetadata",
          "ai-catalog.entries.url"
        ]) {
          assert.isTrue(at.has(expected), `${expected} is among the links found: ${[...at].join(", ")}`)
        }

        // The MCP URL is for MCP clients: GET without a key is the bearer challenge, with one 405 (no SSE stream).
        assert.strictEqual((yield* app.call("/mcp")).status, 401)
        assert.strictEqual((yield* app.call("/mcp", { key })).status, 405)

        const errorsPage = (yield* app.call("/docs/errors")).body as string
        for (const [where, url, method = "GET"] of found) {
          const [path, fragment] = url.slice(baseUrl.length).split("#")
          const reply = yield* app.call(path!, { key, method, ip: "10.7.0.2" })
          assert.notStrictEqual(reply.status, 404, `${where}: ${method} ${url} answered 404`)
          assert.isBelow(reply.status, 500, `${where}: ${method} ${url} answered ${reply.status}`)
          if (fragment !== undefined) assert.include(errorsPage, `id="${fragment}"`, `${where}: #${fragment}`)
        }
      })
    )

    it.effect("the pages are HTML, escape what they are given and name the configured packs", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const hostile = `acct_<script>alert("x")</script>&'`
        for (const path of ["/upgrade", "/claim"]) {
          const reply = yield* app.call(`${path}?account=${encodeURIComponent(hostile)}`)
          assert.strictEqual(reply.status, 200, path)
          assert.match(reply.headers.get("content-type") ?? "", /^text\/html/, path)
          assert.include(reply.headers.get("content-security-policy") ?? "", "default-src 'none'", path)
          assert.notInclude(reply.body, "<script>", path)
          assert.include(reply.body, "acct_&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;", path)
        }
        const upgrade = (yield* app.call("/upgrade")).body as string
        for (const text of ["flex", "production", "$20.00", "10,000 credits", "$99.00 a month", "75,000"]) {
          assert.include(upgrade, text)
        }
        const errors = (yield* app.call("/docs/errors")).body as string
        assert.notInclude(errors, "{base_url}")
        assert.notInclude(errors, "`")
        // Management tokens exist now: AUTH_REQUIRED's entry says how to get one.
        assert.include(errors, `<code>POST ${baseUrl}/v1/auth/email/start</code>`)
        assert.include(errors, `<code>curl -X POST ${baseUrl}/v1/keys/mint</code>`)
        assert.include(
          errors,
          "Here: Free keys from one IP share 200 credits per UTC day, recent (cached) data and first pages only. A search <code>limit</code> is at most 10."
        )
        for (const code of Object.keys(errorCatalog) as Array<ErrorCode>) {
          assert.strictEqual(errors.split(`id="${code}"`).length, 2, `one anchor for ${code}`)
        }
      })
    )
  })
})
