import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { makeApi } from "../../contract/api.ts"
import { NotFound } from "../../contract/errors.ts"
import { type Publication, publishedApi } from "../../contract/openapi.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import { Problems } from "../common/problems.ts"
import { McpRoutes } from "../mcp/routes.ts"
import { AdminRpcRoutes } from "../rpc/routes.ts"
import { KeysRoutes, UsageRoutes } from "./accountRoutes.ts"
import { dataRoutes } from "./dataRoutes.ts"
import { BillingRoutes } from "./billingRoutes.ts"
import { CheckoutPageRoutes } from "./checkout/routes.ts"
import { AuthRoutes, ManagementRoutes, SessionsRoutes } from "./governanceRoutes.ts"
import {
  ClientLayer,
  InputProblemsLayer,
  ManagementAuthLayer,
  PlainInputLayer,
  SpendKeyAuthLayer
} from "./middleware.ts"
import { PageRoutes } from "./pages/routes.ts"
import { StripeWebhookRoutes } from "./stripeWebhook.ts"

const OpsRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const problems = yield* Problems
    yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
    // Routes are attached only after the database is migrated, so any answer here means ready.
    yield* router.add("GET", "/readyz", HttpServerResponse.jsonUnsafe({ status: "ready" }))
    yield* router.add(
      "*",
      "/*",
      Effect.succeed(
        problems.render(
          new NotFound({ message: "No such route. The API is described at /v1/openapi.json and /docs." })
        )
      )
    )
  })
)

/**
 * Every HTTP route of the service for a registry of data operations. The declarations are written
 * with decisions.md's hosts; the OpenAPI document (and the docs page built from it) names the
 * configured hosts and base URL.
 */
export const httpRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>, publication: Publication) => {
  const api = publishedApi(makeApi(operations), publication)
  const apiRoutes = HttpApiBuilder.layer(api, { openapiPath: "/v1/openapi.json" }).pipe(
    Layer.provide([
      KeysRoutes,
      UsageRoutes,
      AuthRoutes,
      SessionsRoutes,
      ManagementRoutes,
      BillingRoutes,
      dataRoutes(api, operations)
    ]),
    Layer.provide([ClientLayer, InputProblemsLayer, PlainInputLayer, SpendKeyAuthLayer, ManagementAuthLayer])
  )
  return Layer.mergeAll(
    apiRoutes,
    // No fonts from the Scalar CDN: the page works offline and loads nothing from other hosts.
    HttpApiScalar.layer(api, { path: "/docs", scalar: { withDefaultFonts: false } }),
    AdminRpcRoutes,
    McpRoutes(operations),
    PageRoutes,
    CheckoutPageRoutes,
    StripeWebhookRoutes,
    OpsRoutes
  )
}
