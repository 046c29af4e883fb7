import { Cause, Effect, Exit } from "effect"
import { FetchHttpClient } from "effect/http"
import type { Offer } from "../../contract/offer.ts"
import { offerOf } from "./resume.ts"
import {
  type BuyX402,
  type ClientOptions,
  type Endpoint,
  makeSvcClient,
  type RequestOf,
  type SuccessOf,
  withIdempotencyKey
} from "./SvcClient.ts"

/**
 * Each route of the contract as an async method, rejecting with the same typed errors as `SvcClient`
 * (`KeyCapReached` for a key cap's INSUFFICIENT_CREDITS); a data call's answer has its `usage`.
 */
export type PromiseClient = {
  readonly [E in Endpoint as E["identifier"]]: (
    ...request: {} extends RequestOf<E> ? [request?: RequestOf<E>] : [request: RequestOf<E>]
  ) => Promise<SuccessOf<E>>
} & {
  /** Buys `credits` at `POST /v1/credits/x402`, paid with the client's x402 account (`ClientOptions.x402`). */
  readonly buyCredits: (credits: number) => Promise<SuccessOf<BuyX402>>
  /** Runs one call with the given Idempotency-Key (to follow `offer.resume` after paying). */
  readonly withIdempotencyKey: <A>(
    idempotencyKey: string,
    call: (client: PromiseClient) => Promise<A>
  ) => Promise<A>
  /** Runs a data call; on a problem with an offer, awaits `pay` and resumes as `offer.resume` says. */
  readonly followingOffer: <A>(
    call: (client: PromiseClient) => Promise<A>,
    pay: (offer: Offer, error: unknown) => Promise<void>
  ) => Promise<A>
}

/** Rejects with the failure itself (an error class of `src/contract/errors.ts`, or the transport's). */
const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  })

/**
 * The client for callers who do not use Effect:
 * `const svc = createClient({ baseUrl, key }); const profile = await svc.getProfile({ query: { identifier } })`.
 */
export const createClient = (options: ClientOptions): PromiseClient => {
  const client = Effect.runSync(makeSvcClient(options).pipe(Effect.provide(FetchHttpClient.layer)))
  const wrap = (idempotencyKey: string | undefined): PromiseClient => {
    const methods = Object.fromEntries(
      Object.entries(client).map(([name, method]) => [
        name,
        (...args: ReadonlyArray<unknown>) => {
          const effect = (method as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>)(
            ...args
          )
          return run(idempotencyKey === undefined ? effect : withIdempotencyKey(idempotencyKey)(effect))
        }
      ])
    )
    return {
      ...methods,
      withIdempotencyKey: (key, call) => call(wrap(key)),
      followingOffer: async (call, pay) => {
        const key = crypto.randomUUID()
        try {
          return await call(wrap(key))
        } catch (error) {
          const offer = offerOf(error)
          if (offer === undefined) throw error
          await pay(offer, error)
          const same = offer.resume.action === "retry_same_idempotency_key"
          return call(wrap(same ? key : crypto.randomUUID()))
        }
      }
    } as PromiseClient
  }
  return wrap(undefined)
}
