import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiScalar } from "effect/http-api"
import { makeApi } from "../../src/contract/api.ts"
import { defaultPublication, publishedApi } from "../../src/contract/openapi.ts"
import { operations } from "../../src/operations/registry.ts"
import {
  docsHeader,
  docsLayer,
  docsScalarConfig,
  evalProbe,
  freshIdempotencyKeys,
  patchedBundle,
  phoneStyle,
  unawaitedBodyRead
} from "../../src/surfaces/http/docsPage.ts"

/**
 * The page loads Scalar's bundle at its first request; what it serves must be effect's page, but
 * for zod's eval probe (answered "no" in advance), Scalar's body read awaited, and the page's
 * Content-Security-Policy.
 */
describe("the /docs page", () => {
  const api = publishedApi(makeApi(operations), {
    ...defaultPublication,
    baseUrl: "http://svc.test",
    upgradeUrl: "http://svc.test/upgrade"
  })
  const options = { path: "/docs", scalar: docsScalarConfig } as const
  const header = docsHeader("http://svc.test")
  const serve = (routes: Layer.Layer<never, never, HttpRouter.HttpRouter>) =>
    Effect.acquireRelease(
      Effect.sync(() => HttpRouter.toWebHandler(routes.pipe(Layer.provide(HttpServer.layerServices)))),
      (app) => Effect.promise(() => app.dispose())
    ).pipe(
      Effect.flatMap((app) =>
        Effect.promise(async () => {
          const response = await app.handler(new Request("http://svc.test/docs"))
          return { status: response.status, headers: [...response.headers], body: await response.text() }
        })
      )
    )

  it.effect(
    "is effect's HttpApiScalar page without the eval probe, with a policy naming its two scripts",
    () =>
      Effect.gen(function* () {
        const ours = yield* serve(
          docsLayer(api, { ...options, header, onBeforeRequest: freshIdempotencyKeys })
        )
        const effects = yield* serve(HttpApiScalar.layer(api, options))
        assert.strictEqual(ours.status, 200)
        const csp = ours.headers.find(([name]) => name === "content-security-policy")?.[1] ?? ""
        // The same headers but the policy, and the length of a body shorter by the probe.
        const others = (headers: ReadonlyArray<[string, string]>) =>
          headers.filter(([name]) => name !== "content-security-policy" && name !== "content-length")
        assert.deepStrictEqual(others(ours.headers), others(effects.headers))
        assert.include(effects.body, evalProbe, "effect's bundle still probes eval this way")
        assert.notInclude(ours.body, evalProbe)
        for (const end of unawaitedBodyRead) {
          assert.strictEqual(
            effects.body.split(end).length,
            2,
            "effect's bundle still reads a body unawaited"
          )
          assert.notInclude(ours.body, end)
        }
        assert.isTrue(
          ours.body ===
            patchedBundle(effects.body)
              .replace(
                'content="width=device-width, initial-scale=1" />',
                `content="width=device-width, initial-scale=1" />${phoneStyle}`
              )
              .replace("<body>", `<body>${header}`)
              .replace(
                /(content: [^\n]*)\n(\s*)\}\)/,
                (_, content: string, indent: string) =>
                  `${content},\n        onBeforeRequest: ${freshIdempotencyKeys}\n${indent}})`
              ),
          "the same HTML but for the probe, the awaited body read, the phone style and the site's header"
        )
        // The site's header (a way back), how to authenticate before anything else, and Scalar
        // without its toolbar (Generate SDKs, Share), the bearer scheme chosen, a fresh
        // Idempotency-Key per request sent from the page.
        assert.include(ours.body, '<a class="brand" href="http://svc.test/">svc data API</a>')
        assert.isBelow(ours.body.indexOf("Authenticate first."), ours.body.indexOf("api-reference-container"))
        assert.include(ours.body, '"showDeveloperTools":"never"')
        assert.include(ours.body, '"preferredSecurityScheme":"bearer"')
        assert.include(ours.body, "onBeforeRequest: ({ request }) => {")
        assert.include(ours.body, "window.Scalar.createApiReference")
        assert.isAbove(ours.body.length, 1_000_000, "Scalar's bundle is inline")
        // Each inline script is allowed by its hash, and nothing else runs.
        const scripts = [...ours.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1]!)
        assert.strictEqual(scripts.length, 2)
        for (const script of scripts)
          assert.include(csp, `'sha256-${createHash("sha256").update(script).digest("base64")}'`)
        assert.notInclude(csp, "unsafe-eval")
        assert.include(csp, "frame-ancestors 'none'")
      }).pipe(Effect.scoped)
  )
})
