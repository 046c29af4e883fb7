import { Config, Context, Effect, Layer, Option, Random, Redacted, type Schema, type Types } from "effect"
import {
  FetchHttpClient,
  HttpClient,
  type HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "effect/http"
import {
  type HttpApi,
  HttpApiClient,
  type HttpApiEndpoint,
  type HttpApiGroup,
  type HttpApiMiddleware
} from "effect/http-api"
import { makeApi } from "../../contract/api.ts"
import { declarations } from "../../contract/operations/index.ts"
import { x402MaxCredits } from "../../domain/plans.ts"
import { defaultRetryPolicy, isRetriable, type RetryPolicy, retryAfterOf, retryDelayMs } from "./retry.ts"
import { distinguishKeyCap, type KeyCapReached, usageOf, type WithUsage } from "./usage.ts"
import {
  makeX402Payer,
  paymentRequiredOf,
  type X402Payer,
  type X402PayerOptions,
  X402PaymentRefused,
  type X402SigningFailed
} from "./x402Payer.ts"

/** The `/v1` contract the server serves, built from the same declarations. */
export const svcApi = makeApi(declarations)
export type SvcApi = typeof svcApi

export type Groups = SvcApi extends HttpApi.HttpApi<string, infer G> ? G : never
export type Endpoint = Extract<HttpApiGroup.Endpoints<Groups>, HttpApiEndpoint.ConstraintRequest>
type Mode = HttpApiClient.Client.ResponseMode

/** A request whose headers are all optional (a data call's Idempotency-Key) may leave `headers` out. */
type OptionalHeaders<R> = R extends { readonly headers: infer H }
  ? {} extends H
    ? Omit<R, "headers"> & { readonly headers?: H }
    : R
  : R

export type RequestOf<E extends Endpoint, M extends Mode = "decoded-only"> = Types.Simplify<
  OptionalHeaders<HttpApiEndpoint.ClientRequest<E["~Params"], E["~Query"], E["~Payload"], E["~Headers"], M>>
>

/** The ids of the data operations: their answers carry the usage headers' numbers. */
type DataId = (typeof declarations)[number]["id"]

/** What a method of `E` answers: a data call's envelope with its `usage`, other routes' bodies as they are. */
export type SuccessOf<E extends Endpoint> = E["identifier"] extends DataId
  ? WithUsage<HttpApiClient.SuccessType<E["~Success"]>>
  : HttpApiClient.SuccessType<E["~Success"]>

/**
 * The contract's errors of `E`, plus `KeyCapReached` on data calls (a key cap's INSUFFICIENT_CREDITS)
 * and, where a call may pay with x402, the payments the client refused to make or could not sign.
 */
export type ErrorOf<E extends Endpoint> =
  | E["~Error"]["Type"]
  | (E["identifier"] extends DataId ? KeyCapReached : never)
  | (E["identifier"] extends DataId | "buyCreditsX402" ? X402PaymentRefused | X402SigningFailed : never)

/** The contract client's method for `E` (`HttpApiClient.Client.Method`), with `headers` optional. */
type Method<E extends Endpoint> = <M extends Mode = "decoded-only">(
  ...request: {} extends RequestOf<E, M> ? [request?: RequestOf<E, M>] : [request: RequestOf<E, M>]
) => Effect.Effect<
  [M] extends ["decoded-only"]
    ? SuccessOf<E>
    : HttpApiClient.Client.Response<HttpApiClient.SuccessType<E["~Success"]>, M>,
  | HttpApiMiddleware.Error<E["~Middleware"]>
  | HttpApiMiddleware.ClientError<E["~Middleware"]>
  | HttpClientError.HttpClientError
  | ([M] extends ["response-only"] ? never : ErrorOf<E> | Schema.SchemaError)
>

export type BuyX402 = Extract<Endpoint, { readonly identifier: "buyCreditsX402" }>

/**
 * Every route of the contract as a typed method: data operations by their id, the rest by name;
 * and `buyCredits`, which pays `POST /v1/credits/x402` with the client's x402 account.
 */
export type SvcClientShape = { readonly [E in Endpoint as E["identifier"]]: Method<E> } & {
  readonly buyCredits: (
    credits: number
  ) => Effect.Effect<
    SuccessOf<BuyX402>,
    ErrorOf<BuyX402> | HttpClientError.HttpClientError | Schema.SchemaError
  >
}

/** `headers: {}` where the caller sent none: the contract's client encodes the headers it declares. */
const withHeaders = (request: unknown) =>
  typeof request === "object" && request !== null && !("headers" in request)
    ? { ...request, headers: {} }
    : request

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8787` (no `/v1`). */
  readonly baseUrl: string
  /** A spend key (`sk_...`): data calls, usage, receipts, checkout. */
  readonly key?: string | undefined
  /** A management token (`svcm_...`): keys, alert, portal, tokens; also spends when no key is given. */
  readonly managementToken?: string | undefined
  readonly retry?: Partial<RetryPolicy> | undefined
  /**
   * Pays with x402: a call refused INSUFFICIENT_CREDITS whose problem carries `PAYMENT-REQUIRED`
   * is paid with this account and sent again with the same Idempotency-Key (one payment per call),
   * within `maxCredits` and `spendLimit`; a payment over either fails with `X402PaymentRefused`.
   */
  readonly x402?: X402PayerOptions | undefined
}

/** One logical call: its Idempotency-Key (reused by every retry), the last request it sent and the last answer's headers. */
interface CallState {
  readonly idempotencyKey: string
  request: HttpClientRequest.HttpClientRequest | undefined
  headers: Readonly<Record<string, string>> | undefined
  /** The `PAYMENT-SIGNATURE` this call paid with, sent on every attempt after it was made. */
  payment: string | undefined
}

const CurrentCall = Context.Reference<CallState | undefined>("svc/client/CurrentCall", {
  defaultValue: () => undefined
})

const ChosenIdempotencyKey = Context.Reference<string | undefined>("svc/client/ChosenIdempotencyKey", {
  defaultValue: () => undefined
})

/**
 * Runs `effect` (one client call) with the given Idempotency-Key instead of a fresh one: how a
 * caller follows an offer's `resume.action: "retry_same_idempotency_key"` after paying.
 */
export const withIdempotencyKey =
  (idempotencyKey: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(effect, ChosenIdempotencyKey, idempotencyKey)

const dataPath = new RegExp(`^/v1/(${[...new Set(declarations.map((d) => d.platform))].join("|")})/`)

/** The routes that take a management token rather than a spend key (docs/accounts.md, "Management tokens"). */
const managementPath =
  /^\/v1\/(keys(\/rotate|\/revoke|\/update)?|alert|portal|auth\/tokens(\/revoke)?|auth\/logout|webhooks(\/delete|\/test|\/[^/]+\/deliveries)?|topup|audit)$/

const pathOf = (request: HttpClientRequest.HttpClientRequest) => new URL(request.url, "http://x").pathname

const bearerFor = (options: ClientOptions, path: string) => {
  if (path === "/v1/keys/mint") return undefined
  return managementPath.test(path)
    ? (options.managementToken ?? options.key)
    : (options.key ?? options.managementToken)
}

/** Adds the bearer the route takes and, on data calls without one, the call's Idempotency-Key. */
const prepare = (options: ClientOptions) => (request: HttpClientRequest.HttpClientRequest) =>
  Effect.gen(function* () {
    const path = pathOf(request)
    const bearer = bearerFor(options, path)
    let prepared = bearer === undefined ? request : HttpClientRequest.bearerToken(request, bearer)
    const call = yield* CurrentCall
    if (call !== undefined && dataPath.test(path) && !("idempotency-key" in prepared.headers))
      prepared = HttpClientRequest.setHeader(prepared, "idempotency-key", call.idempotencyKey)
    if (call?.payment !== undefined)
      prepared = HttpClientRequest.setHeader(prepared, "payment-signature", call.payment)
    if (call !== undefined) call.request = prepared
    return prepared
  })

/** Keeps the answer's headers on the logical call, for a data call's `usage`. */
const recordHeaders = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(CurrentCall, (call) => {
    if (call !== undefined) call.headers = response.headers
  })

/** A data call's envelope with the usage its headers reported; any other answer as it is. */
const withUsage = (call: CallState, value: unknown) =>
  call.request !== undefined &&
  dataPath.test(pathOf(call.request)) &&
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value)
    ? { ...value, usage: usageOf(call.headers ?? {}) }
    : value

/**
 * What one payment of the client may cost at most: the service's price of `maxCredits` credits,
 * asked once at `POST /v1/credits/x402` without a payment. A `maxCredits` below the rail's minimum
 * buys nothing: no payment fits.
 */
type Ceiling = Effect.Effect<bigint, unknown>

/**
 * One logical call: a fresh (or chosen) Idempotency-Key, then attempts until success or a final
 * error. With a payer, an INSUFFICIENT_CREDITS offering x402 is paid once and the call sent again
 * with the same key (not counted as a retry).
 */
const asLogicalCall =
  (policy: RetryPolicy, payer: X402Payer | undefined, ceiling: Ceiling) =>
  (effect: Effect.Effect<unknown, unknown, unknown>): Effect.Effect<unknown, unknown, unknown> =>
    Effect.gen(function* () {
      const chosen = yield* ChosenIdempotencyKey
      const call: CallState = {
        idempotencyKey: chosen ?? crypto.randomUUID(),
        request: undefined,
        headers: undefined,
        payment: undefined
      }
      const attempt = (n: number): Effect.Effect<unknown, unknown, unknown> =>
        Effect.catch(effect, (error) =>
          Effect.gen(function* () {
            const required = payer === undefined ? undefined : paymentRequiredOf(error)
            if (payer !== undefined && required !== undefined && call.payment === undefined) {
              call.payment = yield* payer.pay(required, ceiling)
              return yield* attempt(n)
            }
            if (!isRetriable(error, call.request)) return yield* Effect.fail(error)
            const delay = retryDelayMs(policy, n, retryAfterOf(error), yield* Random.next)
            if (delay === undefined) return yield* Effect.fail(error)
            yield* Effect.sleep(delay)
            return yield* attempt(n + 1)
          })
        )
      return yield* Effect.provideService(attempt(0), CurrentCall, call).pipe(
        Effect.mapError(distinguishKeyCap),
        Effect.map((value) => withUsage(call, value))
      )
    })

/** The typed client over an `HttpClient`: bearer per route, Idempotency-Key per call, retries. */
export const makeSvcClient = (
  options: ClientOptions
): Effect.Effect<SvcClientShape, never, HttpClient.HttpClient> =>
  Effect.map(
    HttpApiClient.make(svcApi, {
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      transformClient: (client) =>
        client.pipe(HttpClient.mapRequestEffect(prepare(options)), HttpClient.tap(recordHeaders))
    }),
    (client) => {
      const payer = options.x402 === undefined ? undefined : makeX402Payer(options.x402)
      const buy = client.buyCreditsX402 as unknown as (request: unknown) => Effect.Effect<unknown, unknown>
      const ceiling: Ceiling = Effect.suspend(() =>
        // No payment buys more than the contract's maximum: a larger bound is that maximum.
        buy({ payload: { credits: Math.min(payer?.options.maxCredits ?? 0, x402MaxCredits) }, headers: {} })
      ).pipe(
        // Not part of the call being paid for: its request and headers are not the call's.
        Effect.provideService(CurrentCall, undefined),
        Effect.as(0n),
        Effect.catch((error) => {
          const tag = (error as { readonly _tag?: unknown })._tag
          const offered = paymentRequiredOf(error)?.accepts[0]
          if (offered !== undefined) return Effect.succeed(BigInt(offered.amount))
          return tag === "InvalidInput" ? Effect.succeed(0n) : Effect.fail(error)
        })
      )
      // `transformResponse` wraps only the decoding; a logical call spans the request too, so each
      // method is wrapped whole. Every group is top level: the client is a flat record of methods.
      const logical = asLogicalCall({ ...defaultRetryPolicy, ...options.retry }, payer, ceiling)
      const methods = Object.entries(client).map(([name, method]) => [
        name,
        (request: unknown) =>
          logical(
            (method as (request: unknown) => Effect.Effect<unknown, unknown, unknown>)(withHeaders(request))
          )
      ])
      const buyCredits = (credits: number) =>
        payer === undefined || credits > payer.options.maxCredits
          ? Effect.fail(
              payer === undefined
                ? new X402PaymentRefused({
                    message:
                      "buyCredits pays with x402: give the client `x402: { account, maxCredits, spendLimit }`.",
                    limit: "no_payer"
                  })
                : new X402PaymentRefused({
                    message: `buyCredits(${credits}) is over maxCredits (${payer.options.maxCredits}): nothing was paid.`,
                    limit: "max_credits"
                  })
            )
          : logical(buy({ payload: { credits }, headers: {} }))
      return Object.fromEntries([...methods, ["buyCredits", buyCredits]]) as unknown as SvcClientShape
    }
  )

/** The service's typed client as an Effect service. */
export class SvcClient extends Context.Service<SvcClient, SvcClientShape>()("clients/sdk/SvcClient") {
  /** Over the given `HttpClient` (a test can bring its own). */
  static readonly layerNoDeps = (options: ClientOptions) => Layer.effect(SvcClient, makeSvcClient(options))
  /** Over `fetch`. */
  static readonly layer = (options: ClientOptions) =>
    SvcClient.layerNoDeps(options).pipe(Layer.provide(FetchHttpClient.layer))
  /** Over `fetch`, configured by SVC_BASE_URL (default the local service), SVC_KEY and SVC_MANAGEMENT_TOKEN. */
  static readonly layerConfig = Layer.unwrap(
    Effect.gen(function* () {
      const baseUrl = yield* Config.String("SVC_BASE_URL").pipe(Config.withDefault("http://127.0.0.1:8787"))
      const key = yield* Config.option(Config.Redacted("SVC_KEY"))
      const token = yield* Config.option(Config.Redacted("SVC_MANAGEMENT_TOKEN"))
      return SvcClient.layer({
        baseUrl,
        key: Option.getOrUndefined(Option.map(key, Redacted.value)),
        managementToken: Option.getOrUndefined(Option.map(token, Redacted.value))
      })
    })
  )
}
