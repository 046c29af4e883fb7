import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiScalar } from "effect/http-api"
import { makeApi } from "../../src/contract/api.ts"
import { defaultPublication, publishedApi } from "../../src/contract/openapi.ts"
import { operations } from "../../src/operations/registry.ts"
import { docsLayer } from "../../src/surfaces/http/docsPage.ts"

/** The page loads Scalar's bundle at its first request; what it serves must be effect's page. */
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

  it.effect("is effect's HttpApiScalar page, byte for byte, with the same headers", () =>
    Effect.gen(function* () {
      const ours = yield* serve(docsLayer(api, options))
      const effects = yield* serve(HttpApiScalar.layer(api, options))
      assert.strictEqual(ours.status, 200)
      assert.deepStrictEqual(ours.headers, effects.headers)
      assert.isTrue(ours.body === effects.body, "the same HTML")
      assert.include(ours.body, "window.Scalar.createApiReference")
      assert.isAbove(ours.body.length, 1_000_000, "Scalar's bundle is inline")
    }).pipe(Effect.scoped)
  )
})
