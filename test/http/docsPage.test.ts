import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiScalar } from "effect/http-api"
import { makeApi } from "../../src/contract/api.ts"
import { defaultPublication, publishedApi } from "../../src/contract/openapi.ts"
import { operations } from "../../src/operations/registry.ts"
import { docsLayer, evalProbe, phoneStyle, withoutEvalProbe } from "../../src/surfaces/http/docsPage.ts"

/**
 * The page loads Scalar's bundle at its first request; what it serves must be effect's page, but
 * for zod's eval probe (answered "no" in advance) and the page's Content-Security-Policy.
 */
describe("the /docs page", () => {
  const api = publishedApi(makeApi(operations), {
    ...defaultPublication,
    baseUrl: "http://svc.test",
    upgradeUrl: "http://svc.test/upgrade"
  })
  const options = { path: "/docs", scalar: { withDefaultFonts: false } } as const
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
        const ours = yield* serve(docsLayer(api, options))
        const effects = yield* serve(HttpApiScalar.layer(api, options))
        assert.strictEqual(ours.status, 200)
        const csp = ours.headers.find(([name]) => name === "content-security-policy")?.[1] ?? ""
        // The same headers but the policy, and the length of a body shorter by the probe.
        const others = (headers: ReadonlyArray<[string, string]>) =>
          headers.filter(([name]) => name !== "content-security-policy" && name !== "content-length")
        assert.deepStrictEqual(others(ours.headers), others(effects.headers))
        assert.include(effects.body, evalProbe, "effect's bundle still probes eval this way")
        assert.notInclude(ours.body, evalProbe)
        assert.isTrue(
          ours.body ===
            withoutEvalProbe(effects.body).replace(
              'content="width=device-width, initial-scale=1" />',
              `content="width=device-width, initial-scale=1" />${phoneStyle}`
            ),
          "the same HTML but for the probe and the phone style"
        )
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
