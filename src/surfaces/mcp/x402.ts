import type { CallToolResult } from "@modelcontextprotocol/server"
import { Effect, Option } from "effect"
import { AppConfig } from "../../config.ts"
import { Caller } from "../../contract/api.ts"
import type { InsufficientCredits, InvalidInput, UpstreamUnavailable } from "../../contract/errors.ts"
import { withPayment, X402, type X402Paid } from "../../payments/X402.ts"
import { encodeX402Header } from "../../payments/x402Wire.ts"

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
 * x402's MCP transport: a `tools/call` whose `_meta["x402/payment"]` is a payment is paid (verified,
 * settled, credited once) before the call runs, and its result carries
 * `_meta["x402/payment-response"]`. A payment already credited runs the call on what it bought; a
 * refused one is the tool's INSUFFICIENT_CREDITS with the reason and the payment to make instead.
 */
export const payingToolCall = <R>(
  payment: unknown,
  run: Effect.Effect<CallToolResult, never, R>,
  refused: (
    failure: InsufficientCredits | InvalidInput | UpstreamUnavailable
  ) => Effect.Effect<CallToolResult, never, R>
) =>
  Effect.gen(function* () {
    const x402 = yield* Effect.serviceOption(X402)
    if (Option.isNone(x402) || Option.isNone(x402.value.config)) return yield* run
    const caller = yield* Caller
    const { baseUrl } = yield* AppConfig
    const outcome = yield* x402.value
      .pay({ accountId: caller.account.id, header: encodeX402Header(payment), credits: undefined })
      .pipe(
        Effect.map(
          (paid): X402Paid | InsufficientCredits | InvalidInput | UpstreamUnavailable | undefined => paid
        ),
        Effect.catchTag("SqlError", Effect.die),
        Effect.catchTag("InsufficientCredits", (failure) =>
          Effect.succeed(
            failure.reason === "authorization_already_used"
              ? undefined
              : withPayment(failure, x402.value.required(failure.credits_required, resourceOf(baseUrl)))
          )
        ),
        Effect.catchTags({
          InvalidInput: (failure) => Effect.succeed(failure),
          UpstreamUnavailable: (failure) => Effect.succeed(failure)
        })
      )
    if (outcome === undefined) return yield* run
    if ("_tag" in outcome) return yield* refused(outcome)
    const result = yield* run
    const note = `The x402 payment settled (transaction ${outcome.transaction}): its ${outcome.credits} credits stay on the balance.`
    return {
      ...(result.isError === true ? noted(result, note) : result),
      _meta: { ...result._meta, [paymentResponseMetaKey]: outcome.paymentResponse }
    }
  })
