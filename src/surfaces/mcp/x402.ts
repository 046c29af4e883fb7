import type { CallToolResult } from "@modelcontextprotocol/server"
import { Effect, Option, Result } from "effect"
import { AppConfig } from "../../config.ts"
import { Caller } from "../../contract/api.ts"
import type { InsufficientCredits, InvalidInput, UpstreamUnavailable } from "../../contract/errors.ts"
import type { Metered } from "../../metering/meterDataCall.ts"
import { withPayment, X402, type X402Paid } from "../../payments/X402.ts"
import { decodePaymentSignature, encodeX402Header, isUptoPayment } from "../../payments/x402Wire.ts"
import { lackingCredits, settledNote } from "../common/x402.ts"

/** Where x402's MCP transport carries a payment in a `tools/call`, and the settlement in its result. */
export const paymentMetaKey = "x402/payment"
export const paymentResponseMetaKey = "x402/payment-response"

/** A failed call's problem, saying that the payment made with it stays on the balance. */
const noted = (result: CallToolResult, note: string): CallToolResult => {
  const [first, ...others] = result.content
  if (first?.type !== "text") return result
  try {
    const problem = JSON.parse(first.text) as { message?: string; detail?: string }
    const changed = {
      ...problem,
      message: `${problem.message ?? ""} ${note}`,
      detail: `${problem.detail ?? ""} ${note}`
    }
    return {
      ...result,
      content: [{ type: "text", text: JSON.stringify(changed) }, ...others],
      ...(result.structuredContent === undefined ? {} : { structuredContent: changed })
    }
  } catch {
    return result
  }
}

/** The resource an MCP payment names: the endpoint the tools are called on. */
const resourceOf = (baseUrl: string) => `${baseUrl}/mcp`

/**
 * A tool's INSUFFICIENT_CREDITS with the x402 payment that buys what it lacks, where the rail is
 * offered (its error result then carries the `PaymentRequired` object, `problemResult`).
 */
export const pricedForMcp = (failure: InsufficientCredits) =>
  Effect.flatMap(Effect.serviceOption(X402), (x402) =>
    Option.isNone(x402)
      ? Effect.succeed(failure)
      : AppConfig.useSync((config) => x402.value.offerOn(failure, resourceOf(config.baseUrl)))
  )

/**
 * A data tool's metered answer as its result will price it: an INSUFFICIENT_CREDITS offers, beside
 * the exact payment, the upto scheme's authorization of at most the call's `max_credits` (where
 * `X402_SCHEMES` offers it). Anything else is left as it is, untouched on the hot path.
 */
export const pricedCall =
  (maxCredits: number | undefined) =>
  <E>(metered: Metered<E>): Effect.Effect<Metered<E>, never, AppConfig> => {
    // A key cap's is left as it is: paying does not lift it.
    const failure = lackingCredits(metered)
    if (failure === undefined) return Effect.succeed(metered)
    return Effect.flatMap(Effect.serviceOption(X402), (x402) =>
      Option.isNone(x402)
        ? Effect.succeed(metered)
        : AppConfig.useSync((config) => ({
            ...metered,
            result: Result.fail(x402.value.offerOn(failure, resourceOf(config.baseUrl), { maxCredits }))
          }))
    )
  }

/**
 * x402's MCP transport: a `tools/call` whose `_meta["x402/payment"]` is a payment is paid (verified,
 * settled, credited once) and its result carries `_meta["x402/payment-response"]`.
 *
 * - `exact`: paid before the call runs.
 * - `upto` (a Permit2 authorization of at most the call's `max_credits`): the call runs first;
 *   only if it is refused INSUFFICIENT_CREDITS again is what it lacks settled out of the
 *   authorization and credited, and the call run once more.
 *
 * A payment already credited runs the call on what it bought; a refused one is the tool's
 * INSUFFICIENT_CREDITS with the reason and the payment to make instead.
 */
export const payingToolCall = <E, R>(
  payment: unknown,
  meter: Effect.Effect<Metered<E>, never, R>,
  respond: (metered: Metered<E>) => Effect.Effect<CallToolResult, never, R>,
  refused: (
    failure: InsufficientCredits | InvalidInput | UpstreamUnavailable
  ) => Effect.Effect<CallToolResult, never, R>
) =>
  Effect.gen(function* () {
    const x402 = yield* Effect.serviceOption(X402)
    const run = Effect.flatMap(meter, respond)
    if (Option.isNone(x402) || Option.isNone(x402.value.config)) return yield* run
    const caller = yield* Caller
    const { baseUrl } = yield* AppConfig
    const header = encodeX402Header(payment)
    const decoded = decodePaymentSignature(header)
    const upto = decoded !== undefined && isUptoPayment(decoded)
    const first = upto ? yield* meter : undefined
    const lacking = first === undefined ? undefined : lackingCredits(first)
    if (first !== undefined && lacking === undefined) return yield* respond(first)
    const outcome = yield* x402.value
      .pay({
        accountId: caller.account.id,
        header,
        credits: lacking === undefined ? undefined : lacking.credits_required - lacking.credits_available,
        upto
      })
      .pipe(
        Effect.map(
          (paid): X402Paid | InsufficientCredits | InvalidInput | UpstreamUnavailable | undefined => paid
        ),
        Effect.catchTag("SqlError", Effect.die),
        Effect.catchTag("InsufficientCredits", (failure) =>
          Effect.succeed(
            failure.reason === "authorization_already_used"
              ? undefined
              : withPayment(
                  failure,
                  lacking === undefined
                    ? x402.value.required(failure.credits_required, resourceOf(baseUrl))
                    : x402.value.offerOn(lacking, resourceOf(baseUrl), { maxCredits: undefined }).x402
                )
          )
        ),
        Effect.catchTags({
          InvalidInput: (failure) => Effect.succeed(failure),
          UpstreamUnavailable: (failure) => Effect.succeed(failure)
        })
      )
    if (outcome === undefined) return yield* first === undefined ? run : respond(first)
    if ("_tag" in outcome) return yield* refused(outcome)
    const result = yield* run
    return {
      ...(result.isError === true ? noted(result, settledNote(outcome)) : result),
      _meta: { ...result._meta, [paymentResponseMetaKey]: outcome.paymentResponse }
    }
  })
