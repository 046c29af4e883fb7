import { createHash } from "node:crypto"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { type HttpApi, type HttpApiGroup, type HttpApiScalar, OpenApi } from "effect/http-api"
import { contentSecurityPolicy, escapeHtml } from "../../domain/html.ts"

/**
 * The `/docs` page as effect's `HttpApiScalar.layer` serves it (the same HTML but for zod's eval
 * probe; test/http/docsPage.test.ts compares the two), except that Scalar's bundled script (a 3 MB
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

const loadBundle: Effect.Effect<string> = Effect.promise(
  () => import(bundleUrl) as Promise<{ readonly javascript: string }>
).pipe(Effect.map((module) => withoutEvalProbe(module.javascript)))

// effect's `http-api/internal/html.js`, which is not exported either.
const escapeJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"))

/** `HttpApiScalar`'s page for `spec`, with the bundle inline, and the scripts it runs. */
const page = (spec: OpenApi.OpenAPISpec, javascript: string, options: HttpApiScalar.ScalarConfig = {}) => {
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
      content="width=device-width, initial-scale=1" />
  </head>
  <body>
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
  options: { readonly path: `/${string}`; readonly scalar?: HttpApiScalar.ScalarConfig }
) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const response = yield* Effect.cached(
        Effect.map(loadBundle, (javascript) => {
          const { html, scripts } = page(OpenApi.fromApi(api), javascript, options.scalar)
          return HttpServerResponse.html(html).pipe(
            HttpServerResponse.setHeader("content-security-policy", docsPolicy(scripts))
          )
        })
      )
      yield* router.add("GET", options.path, response)
    })
  )
