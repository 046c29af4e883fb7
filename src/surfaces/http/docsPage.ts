import { createHash } from "node:crypto"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { type HttpApi, type HttpApiGroup, type HttpApiScalar, OpenApi } from "effect/http-api"
import { contentSecurityPolicy, escapeHtml } from "../../domain/html.ts"

/**
 * The `/docs` page as effect's `HttpApiScalar.layer` serves it (the same HTML but for zod's eval
 * probe, Scalar's unawaited body read and the site's header above it; test/http/docsPage.test.ts
 * compares the two), except that Scalar's bundled script (a 3 MB
 * module whose source and exported string stay in memory once loaded) is imported at the first
 * request for the page instead of when the routes are built: most processes never serve it. Its
 * Content-Security-Policy allows exactly its two inline scripts, by hash
 * (test/pages/docs.browser.test.ts renders it in Chromium with no violation).
 */

/** effect's bundle module; its package exports hide `internal/`, so it is found beside `HttpApiScalar`. */
const bundleUrl = new URL("./internal/httpApiScalar.js", import.meta.resolve("effect/http-api/HttpApiScalar"))
  .href

/**
 * The one place the bundle would evaluate a string: the zod it bundles probes `new Function("")` to
 * decide whether to compile its parsers. The page's policy forbids eval, so the probe would only
 * be reported as a violation before zod falls back; it is answered "no" here instead.
 */
export const evalProbe = 'try{return new Function(""),!0}catch(e){return!1}'
export const withoutEvalProbe = (javascript: string) => javascript.replace(evalProbe, "return!1")

/**
 * Scalar's client reads an answer's body in a promise it returns from inside its `try` without
 * awaiting it: a request cancelled while its body is read (the client closed with Escape) escapes
 * the `catch`, its "request complete" is never emitted, and every Send button then stays disabled
 * until the page is reloaded. Awaited, the cancellation is caught as the `catch` means it to be.
 * Both ends of the expression are replaced, or neither (test/http/docsPage.test.ts fails when
 * effect's bundle no longer holds them).
 */
export const unawaitedBodyRead = [
  'return c?.startsWith("text/event-stream")&&i.body?JBe(',
  'shouldSkipBody:m})}catch(e){return[DOe(e,"An error occurred while making the request"),null]}'
] as const
const awaitedBodyRead = [
  'return await(c?.startsWith("text/event-stream")&&i.body?JBe(',
  'shouldSkipBody:m}))}catch(e){return[DOe(e,"An error occurred while making the request"),null]}'
] as const
export const withBodyReadAwaited = (javascript: string) => {
  const [start, end] = unawaitedBodyRead
  const once = (text: string) => javascript.split(text).length === 2
  return once(start) && once(end)
    ? javascript.replace(start, awaitedBodyRead[0]).replace(end, awaitedBodyRead[1])
    : javascript
}

/** What the page serves of effect's bundle: its two fixes. */
export const patchedBundle = (javascript: string) => withBodyReadAwaited(withoutEvalProbe(javascript))

const loadBundle: Effect.Effect<string> = Effect.promise(
  () => import(bundleUrl) as Promise<{ readonly javascript: string }>
).pipe(Effect.map((module) => patchedBundle(module.javascript)))

// effect's `http-api/internal/html.js`, which is not exported either.
const escapeJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"))

/**
 * Scalar's sections keep a few invisible pixels past their right edge (its clipped content-type
 * labels): on a 360 px phone the whole page then scrolls sideways by 24 px. Each section clips its
 * own overflow on that axis; code blocks and tables keep their own scrolling inside.
 */
export const phoneStyle = "<style>.section-container{overflow-x:clip}</style>"

/**
 * What `/docs` shows above Scalar: the site's header (a way back to the other pages) and, first, how
 * to authenticate; then why the copied samples' Idempotency-Key must be replaced (Scalar's own
 * "Send" gets a fresh one per request from `freshIdempotencyKeys`).
 */
export const docsHeader = (baseUrl: string): string => {
  const base = escapeHtml(baseUrl)
  return `<style>.svc-site{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1.25rem;padding:.6rem 1rem;border-bottom:1px solid #d0d7de;font:16px/1.5 system-ui,sans-serif}
.svc-site a{color:#1b1f24;text-decoration:none}.svc-site a:hover{text-decoration:underline}.svc-site .brand{font-weight:700;margin-right:auto}
.svc-site nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
.svc-auth{max-width:60rem;margin:.75rem auto;padding:.75rem 1rem;border:1px solid #d0d7de;border-radius:8px;font:15px/1.55 system-ui,sans-serif;color:#1b1f24;background:#f6f8fa}
.svc-auth code{font:.9em ui-monospace,monospace;overflow-wrap:anywhere}.svc-auth p{margin:.25rem 0}
@media (max-width:62rem){.svc-auth{margin:.75rem}}</style>
<header class="svc-site"><a class="brand" href="${base}/">svc data API</a><nav aria-label="Site"><a href="${base}/docs">API reference</a><a href="${base}/docs/errors">Error codes</a><a href="${base}/upgrade">Pricing</a><a href="${base}/dashboard">Dashboard</a></nav></header>
<section class="svc-auth" aria-label="How to authenticate"><p><strong>Authenticate first.</strong> Mint a free key (no signup):
<code>curl -s -X POST ${base}/v1/keys/mint</code>, then paste its <code>key</code> under Authentication, Bearer Token, below:
every "Test Request" then sends it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
<p>A request sent from this page gets a fresh <code>Idempotency-Key</code> each time. A copied sample carries a fixed one
(<code>docs-example-...</code>): give each call of yours a new one (a UUID), since the same key with other arguments is refused
(409 <code>IDEMPOTENCY_KEY_REUSED</code>).</p></section>`
}

/**
 * Scalar's `onBeforeRequest` hook for its "Send" (its bundled version has no `customFetch`): a data
 * call (a GET) without an Idempotency-Key (Scalar's client leaves optional headers out) or still
 * carrying a sample's fixed one (`docs-example-<operation>`) goes with a fresh random one; one typed
 * in is sent as typed.
 */
export const freshIdempotencyKeys = `({ request }) => {
  const key = request.headers.get("idempotency-key")
  if (request.method === "GET" && (key === null || key.startsWith("docs-example-"))) {
    const bytes = crypto.getRandomValues(new Uint8Array(16))
    request.headers.set("idempotency-key", "docs-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""))
  }
  return { request }
}`

/** The options `/docs` runs Scalar with: no fonts from its CDN, no controls that mean nothing here. */
export const docsScalarConfig: HttpApiScalar.ScalarConfig = {
  withDefaultFonts: false,
  // The toolbar's "Generate SDKs" and "Share" (shown on localhost) lead to Scalar's own services.
  showDeveloperTools: "never",
  authentication: { preferredSecurityScheme: "bearer" }
} as HttpApiScalar.ScalarConfig

/** `HttpApiScalar`'s page for `spec`, with the bundle inline, and the scripts it runs. */
const page = (
  spec: OpenApi.OpenAPISpec,
  javascript: string,
  options: HttpApiScalar.ScalarConfig = {},
  ours: { readonly header?: string | undefined; readonly onBeforeRequest?: string | undefined } = {}
) => {
  const { customFetch, ...scalar } = options
  const scalarConfig = { _integration: "html", ...scalar }
  const start = `
      window.Scalar.createApiReference(document.getElementById('api-reference-container'), {
        ...${escapeJson(scalarConfig)},
        content: ${escapeJson(spec)}${
          customFetch === undefined
            ? ""
            : `,
        customFetch: ${customFetch}`
        }${
          ours.onBeforeRequest === undefined
            ? ""
            : `,
        onBeforeRequest: ${ours.onBeforeRequest}`
        }
      })
    `
  const html = `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(spec.info.title)}</title>
    ${!spec.info.description ? "" : `<meta name="description" content="${escapeHtml(spec.info.description)}"/>`}
    ${!spec.info.description ? "" : `<meta name="og:description" content="${escapeHtml(spec.info.description)}"/>`}
    <meta
      name="viewport"
      content="width=device-width, initial-scale=1" />${phoneStyle}
  </head>
  <body>${ours.header ?? ""}
    <div id="api-reference-container"></div>
    <script>${javascript}</script>
    <script>${start}</script>
  </body>
</html>`
  return { html, scripts: [javascript, start] }
}

const hashSource = (script: string) => `'sha256-${createHash("sha256").update(script).digest("base64")}'`

/**
 * Scalar's page needs its two scripts, its injected styles (inline, as on every page) and, for its
 * "Send" button, requests to the service itself; nothing else.
 */
const docsPolicy = (scripts: ReadonlyArray<string>) =>
  contentSecurityPolicy({ scripts: scripts.map(hashSource), connect: ["'self'"] })

/** `HttpApiScalar.layer(api, options)`, its page made once, at the first request. */
export const docsLayer = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  options: {
    readonly path: `/${string}`
    readonly scalar?: HttpApiScalar.ScalarConfig
    /** HTML above Scalar's page (`docsHeader`). */
    readonly header?: string
    /** Scalar's `onBeforeRequest` hook, a function expression (`freshIdempotencyKeys`). */
    readonly onBeforeRequest?: string
  }
) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const response = yield* Effect.cached(
        Effect.map(loadBundle, (javascript) => {
          const { html, scripts } = page(OpenApi.fromApi(api), javascript, options.scalar, options)
          return HttpServerResponse.html(html).pipe(
            HttpServerResponse.setHeader("content-security-policy", docsPolicy(scripts))
          )
        })
      )
      yield* router.add("GET", options.path, response)
    })
  )
