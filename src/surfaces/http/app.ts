import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, OpenApi } from "effect/http-api"
import { makeApi, ServedApi } from "../../contract/api.ts"
import { NotFound, Unauthorized } from "../../contract/errors.ts"
import { type Publication, publishedApi } from "../../contract/openapi.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import { Lifecycle } from "../../observability/Lifecycle.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import { MetricsPage, prometheusContentType } from "../../services/MetricsPage.ts"
import { Problems } from "../common/problems.ts"
import { McpRoutes } from "../mcp/routes.ts"
import { AdminRpcRoutes } from "../rpc/routes.ts"
import { KeysRoutes, UsageRead, UsageRoutes } from "./accountRoutes.ts"
import { AuditRoutes } from "./auditRoutes.ts"
import { BillingRoutes } from "./billingRoutes.ts"
import { CheckoutPageRoutes } from "./checkout/routes.ts"
import { DashboardRoutes } from "./dashboard/routes.ts"
import { DataRoutes } from "./dataRoutes.ts"
import { DiscoveryRoutes } from "./discoveryRoutes.ts"
import { docsHeader, docsLayer, docsScalarConfig, freshIdempotencyKeys } from "./docsPage.ts"
import { AuthRoutes, ChildKeysRoutes, ManagementRoutes, SessionsRoutes } from "./governanceRoutes.ts"
import { JwksRoute } from "./jwksRoute.ts"
import {
  ClientLayer,
  InputProblemsLayer,
  ManagementAuthLayer,
  PlainInputLayer,
  SpendKeyAuthLayer
} from "./middleware.ts"
import { AppsRoutes } from "./oauth/appsRoutes.ts"
import { OAuthRoutes } from "./oauth/routes.ts"
import { PageRoutes } from "./pages/routes.ts"
import { methodsAt } from "./routeHints.ts"
import { StripeWebhookRoutes } from "./stripeWebhook.ts"
import { ExportRoutes, WebhooksRoutes } from "./webhookRoutes.ts"

/** `/v1/openapi.json`: the whole contract, made at its first request. */
const openApiRoute = (document: () => OpenApi.OpenAPISpec) =>
  HttpRouter.use((router) => {
    let answer: HttpServerResponse.HttpServerResponse | undefined
    return router.add(
      "GET",
      "/v1/openapi.json",
      Effect.sync(() => (answer ??= HttpServerResponse.jsonUnsafe(document())))
    )
  })

/**
 * Health, readiness, metrics, and the answer to every request no route takes. Health stays 200
 * while the process lives; readiness turns 503 as soon as it drains (SIGTERM).
 */
const opsRoutes = (methodsAt: (path: string) => ReadonlyArray<string>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const problems = yield* Problems
      const lifecycle = yield* Lifecycle
      const metrics = yield* MetricsPage
      const bearers = yield* Bearers
      yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
      // Routes are attached only after the database is migrated, so any answer here means ready.
      const ready = HttpServerResponse.jsonUnsafe({ status: "ready" })
      const draining = HttpServerResponse.jsonUnsafe({ status: "draining" }, { status: 503 })
      yield* router.add(
        "GET",
        "/readyz",
        Effect.sync(() => (lifecycle.draining() ? draining : ready))
      )
      if (metrics.onMainPort)
        yield* router.add(
          "GET",
          "/metrics",
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            const allowed = yield* Effect.result(
              metrics.allows(bearerCredential(request.headers.authorization) ?? "", bearers.clientIp(request))
            )
            if (allowed._tag === "Failure") return problems.render(allowed.failure)
            if (!allowed.success)
              return problems.render(
                new Unauthorized({
                  message:
                    "Send the metrics token as `Authorization: Bearer <token>` (METRICS_TOKEN; the admin token does not open /metrics, and without METRICS_TOKEN it is served only on METRICS_PORT)."
                })
              )
            return HttpServerResponse.text(yield* metrics.render, { contentType: prometheusContentType })
          })
        )
      yield* router.add(
        "*",
        "/*",
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const path = new URL(request.url, "http://route").pathname
          const methods = methodsAt(path)
          if (methods.length === 0)
            return problems.render(
              new NotFound({ message: "No such route. The API is described at /v1/openapi.json and /docs." })
            )
          // A known path with another method: still NOT_FOUND (no 405 among the 17 codes), naming the method.
          return problems
            .render(
              new NotFound({
                message: `${request.method} ${path} is not a route; ${methods.map((method) => `${method} ${path}`).join(" and ")} is. See /docs.`
              })
            )
            .pipe(HttpServerResponse.setHeader("allow", methods.join(", ")))
        })
      )
    })
  )

/**
 * Every HTTP route of the service for a registry of data operations. The declarations are written
 * with the default hosts; the OpenAPI document (and the docs page built from it) names the
 * configured hosts and base URL.
 */
export const httpRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>, publication: Publication) => {
  const api = publishedApi(makeApi(operations), publication)
  // The data operations' routes are `DataRoutes` (wire adapters of the metering front door); the
  // HttpApi serves the other routes, and the whole contract is published as OpenAPI.
  const apiRoutes = HttpApiBuilder.layer(ServedApi).pipe(
    Layer.provide([
      KeysRoutes,
      UsageRoutes,
      AuthRoutes,
      SessionsRoutes,
      ManagementRoutes,
      ChildKeysRoutes,
      AppsRoutes,
      BillingRoutes,
      WebhooksRoutes,
      ExportRoutes(operations),
      AuditRoutes
    ]),
    Layer.provide([ClientLayer, InputProblemsLayer, PlainInputLayer, SpendKeyAuthLayer, ManagementAuthLayer])
  )
  return Layer.mergeAll(
    apiRoutes,
    DataRoutes(operations),
    UsageRead,
    openApiRoute(() => OpenApi.fromApi(api)),
    // No fonts from the Scalar CDN: the page works offline and loads nothing from other hosts.
    docsLayer(api, {
      path: "/docs",
      scalar: docsScalarConfig,
      header: docsHeader(publication.baseUrl),
      onBeforeRequest: freshIdempotencyKeys
    }),
    AdminRpcRoutes,
    JwksRoute,
    DiscoveryRoutes,
    McpRoutes(operations),
    PageRoutes,
    DashboardRoutes(operations),
    OAuthRoutes,
    CheckoutPageRoutes,
    StripeWebhookRoutes,
    opsRoutes(methodsAt(() => OpenApi.fromApi(api)))
  )
}
