import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Duration, Effect, Layer, Schedule } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { OpenApi } from "effect/http-api"
import { AppConfig } from "./config.ts"
import { makeApi } from "./contract/api.ts"
import { publishedApi } from "./contract/openapi.ts"
import { problemContext } from "./contract/problem.ts"
import { Bearers } from "./identity/Bearers.ts"
import { withRequestLog } from "./logging.ts"
import { HitCharges } from "./metering/HitCharges.ts"
import { IdempotencyStore } from "./metering/IdempotencyStore.ts"
import { ReceiptSigner } from "./metering/ReceiptSigner.ts"
import { Receipts } from "./metering/Receipts.ts"
import { Reservations } from "./metering/Reservations.ts"
import { OAuthHousekeeping, OAuthServer } from "./oauth/OAuthServer.ts"
import { Lifecycle } from "./observability/Lifecycle.ts"
import { recordRequest } from "./observability/metrics.ts"
import type { AnyOperation } from "./operations/Operation.ts"
import { Admin } from "./operator/Admin.ts"
import { Billing } from "./payments/Billing.ts"
import { Checkout } from "./payments/Checkout.ts"
import { paymentRailsLayer } from "./payments/rails.ts"
import { Topups } from "./payments/Topups.ts"
import { TopupWake } from "./payments/TopupWake.ts"
import { X402 } from "./payments/X402.ts"
import { X402Facilitator } from "./payments/X402Facilitator.ts"
import { X402Reconciler } from "./payments/X402Reconciler.ts"
import { Accounts } from "./services/Accounts.ts"
import { AdminToken } from "./services/AdminToken.ts"
import { Audit } from "./services/Audit.ts"
import { Cache } from "./services/Cache.ts"
import { Credits } from "./services/Credits.ts"
import { Domains } from "./services/Domains.ts"
import { Ids } from "./services/Ids.ts"
import { KeyMemory } from "./services/KeyMemory.ts"
import { Keys } from "./services/Keys.ts"
import { ManagementTokens } from "./services/ManagementTokens.ts"
import { MetricsPage } from "./services/MetricsPage.ts"
import { Mailer } from "./services/mail/Mailer.ts"
import { Outbox } from "./services/mail/Outbox.ts"
import { RateLimits } from "./services/RateLimits.ts"
import { Recovery } from "./services/Recovery.ts"
import { Settings } from "./services/Settings.ts"
import { SignIn } from "./services/SignIn.ts"
import { Usage } from "./services/Usage.ts"
import { WebhookEvents, WebhookWake } from "./services/WebhookEvents.ts"
import * as Database from "./store/Database.ts"
import { Notifications } from "./store/Notifications.ts"
import { Problems } from "./surfaces/common/problems.ts"
import { portIsFree, reusePort, spreadAccepts } from "./surfaces/http/acceptors.ts"
import { httpRoutes } from "./surfaces/http/app.ts"
import { AuditAddressLayer } from "./surfaces/http/middleware.ts"
import { answerProtocolErrors, unroutable } from "./surfaces/http/protocolErrors.ts"
import { routeLabeller } from "./surfaces/http/routeHints.ts"
import { HardenedResponse } from "./surfaces/http/securityHeaders.ts"
import { Deliveries } from "./webhooks/Deliveries.ts"
import { SecretBox } from "./webhooks/SecretBox.ts"
import { Webhooks } from "./webhooks/Webhooks.ts"

/** The services behind every surface, over one migrated SqlClient, with the ids they are given. */
export const servicesLayer = (
  ids: Layer.Layer<Ids> = Ids.layer,
  facilitator: Layer.Layer<X402Facilitator, never, AppConfig> = X402Facilitator.layer
) =>
  Layer.mergeAll(
    Usage.layer,
    Problems.layer,
    Bearers.layer,
    IdempotencyStore.layer,
    Admin.layer,
    AdminToken.layer,
    Cache.layer,
    Domains.layer,
    Reservations.layer,
    HitCharges.layer,
    Receipts.layer,
    // Its own per instance, from the instance's configuration, even beside another in one process.
    Layer.fresh(ReceiptSigner.layer),
    Webhooks.layer,
    Topups.layer
  ).pipe(
    Layer.provideMerge(OAuthServer.layer),
    Layer.provideMerge(Checkout.layer),
    Layer.provideMerge(Billing.layer),
    // The rails with the x402 rail beneath them (one step: a pipe takes at most 20).
    Layer.provideMerge(
      paymentRailsLayer.pipe(Layer.provideMerge(X402.layer.pipe(Layer.provideMerge(facilitator))))
    ),
    Layer.provideMerge(Recovery.layer),
    Layer.provideMerge(SignIn.layer),
    Layer.provideMerge(ManagementTokens.layer),
    Layer.provideMerge(Keys.layer),
    Layer.provideMerge(Credits.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        WebhookEvents.layer.pipe(Layer.provideMerge(WebhookWake.layer)),
        SecretBox.layer,
        TopupWake.layer
      )
    ),
    Layer.provideMerge(Outbox.layer),
    Layer.provideMerge(Accounts.layer),
    Layer.provideMerge(RateLimits.layer),
    Layer.provideMerge(Settings.layer),
    Layer.provideMerge(KeyMemory.layer),
    Layer.provideMerge(Notifications.layer),
    Layer.provideMerge(Audit.layer),
    // Below the audit log, whose reads it limits, and so below everything above it.
    Layer.provideMerge(RateLimits.layer),
    Layer.provideMerge(Lifecycle.layer),
    Layer.provideMerge(ids)
  )

/** The services with random ids, as the service runs. */
export const ServicesLayer = servicesLayer()

/**
 * Releases reservations whose holder died; forgets expired idempotency tombstones, cache copies,
 * unpaid checkout sessions and portal links, and webhook deliveries past their retention.
 */
export const Housekeeping = Layer.effectDiscard(
  Effect.gen(function* () {
    const reservations = yield* Reservations
    const idempotency = yield* IdempotencyStore
    const cache = yield* Cache
    const checkout = yield* Checkout
    const deliveries = yield* Deliveries
    const every = <E, R>(interval: Duration.Input, work: Effect.Effect<unknown, E, R>) =>
      Effect.forkScoped(
        work.pipe(
          Effect.catchCause((cause) => Effect.logWarning("housekeeping failed", cause)),
          Effect.repeat(Schedule.spaced(interval))
        )
      )
    // A dead call's reservation blocks its account's next call: freed within seconds. What only
    // takes room (tombstones, old copies, ended checkouts) waits a minute.
    yield* every("5 seconds", reservations.sweepExpired)
    yield* every(
      "1 minute",
      Effect.all([idempotency.purgeExpired, cache.purgeExpired, checkout.sweepExpired, deliveries.sweep])
    )
  })
)

/** Paths counted under their own name in the metrics besides the data operations' and the API's templates. */
const opsPaths = [
  "/",
  "/healthz",
  "/readyz",
  "/metrics",
  "/docs",
  "/login",
  "/v1/openapi.json",
  "/admin/rpc",
  "/.well-known/jwks.json"
]

/**
 * The service's HTTP application: every route, answering a request in context with its response.
 * The server below serves it on a socket; anything else may run it on requests of its own (a test
 * or a simulation, in process).
 */
export const httpApp = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const problems = yield* Problems
    const lifecycle = yield* Lifecycle
    const routes = yield* HttpRouter.toHttpEffect(httpRoutes(operations, config))
    const routeOf = routeLabeller(
      [...operations.map((operation) => `/v1${operation.path}`), ...opsPaths],
      () => OpenApi.fromApi(publishedApi(makeApi(operations), config))
    )
    // hot path
    const app = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const started = config.metrics ? performance.now() : 0
      const refused = unroutable(request)
      return (
        refused !== undefined
          ? Effect.succeed(problems.render(refused).pipe(HttpServerResponse.setHeader("connection", "close")))
          : routes
      ).pipe(
        // Whatever escapes a route (a defect, say) still leaves as a problem: INTERNAL with a trace id.
        Effect.catchCause(problems.fromUnknown),
        Effect.map((response) => {
          if (config.metrics)
            recordRequest(
              routeOf(request.url),
              request.method,
              response.status,
              (performance.now() - started) / 1000
            )
          // Draining: each connection closes after its answer, so clients reconnect elsewhere.
          return lifecycle.draining()
            ? HttpServerResponse.setHeader(response, "connection", "close")
            : response
        })
      )
    }).pipe(withRequestLog)
    return app
  })

/**
 * Builds every route (and so the database and its migrations) before the socket listens,
 * so no request can arrive at a half-built server.
 */
export const httpServerLayer = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const app = yield* httpApp(operations)
      // Node's parser answers malformed requests itself; the server hands them to us instead. Every
      // HTML answer, ours or oidc-provider's, leaves with the security headers (`HardenedResponse`).
      const server = () =>
        spreadAccepts(() => {
          const node = createServer({ requireHostHeader: false, ServerResponse: HardenedResponse })
          answerProtocolErrors(node, problemContext(config))
          return node
        })
      yield* portIsFree(config.port, config.host)
      // The start line (address, store, upstream, MCP mounts) is main.ts's.
      return HttpServer.serve(app).pipe(
        Layer.provideMerge(
          // Closing waits for the answers in flight (idle connections close at once), up to the grace.
          NodeHttpServer.layer(server, {
            port: config.port,
            host: config.host,
            reusePort,
            gracefulShutdownTimeout: Duration.millis(config.shutdownGraceMs)
          })
        )
      )
    })
  ).pipe(Layer.provide(NodeHttpServer.layerHttpServices))

/**
 * The whole service: HTTP surface, housekeeping, services and the store; the configured hosts as
 * `PlatformHosts` for the operations.
 */
export const appLayer = <R>(
  operations: ReadonlyArray<AnyOperation<R>>,
  database: Layer.Layer<Database.Migrated, unknown, AppConfig> = Database.layer,
  ids: Layer.Layer<Ids> = Ids.layer,
  /** Who verifies and settles x402 payments: the configured facilitator, or a test's. */
  facilitator: Layer.Layer<X402Facilitator, never, AppConfig> = X402Facilitator.layer
) => httpServerLayer(operations).pipe(Layer.provideMerge(supportLayer(database, ids, {}, facilitator)))

/**
 * Everything the HTTP surface stands on: housekeeping, services, the store, the configured hosts.
 * `workers`: how often the top-up and webhook workers look for due work when nothing woke them
 * (`pollEvery`, doubling while idle up to `idleMax`; a simulation running hours of virtual time
 * looks less often).
 */
export const supportLayer = (
  database: Layer.Layer<Database.Migrated, unknown, AppConfig>,
  ids: Layer.Layer<Ids>,
  workers: { readonly pollEvery?: Duration.Input; readonly idleMax?: Duration.Input } = {},
  facilitator: Layer.Layer<X402Facilitator, never, AppConfig> = X402Facilitator.layer
) =>
  AppConfig.hostsLayer.pipe(
    Layer.provideMerge(Housekeeping),
    Layer.provideMerge(OAuthHousekeeping),
    Layer.provideMerge(Topups.worker(workers)),
    Layer.provideMerge(X402Reconciler.worker()),
    Layer.provideMerge(Deliveries.layerWith(workers)),
    Layer.provideMerge(Mailer.layer),
    Layer.provideMerge(MetricsPage.layer),
    Layer.provideMerge(AuditAddressLayer),
    Layer.provideMerge(servicesLayer(ids, facilitator)),
    Layer.provideMerge(database)
  )
