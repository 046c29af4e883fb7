import { Effect, Schema } from "effect"
import { InvalidInput, NotFound, UpstreamUnavailable } from "../../src/contract/errors.ts"
import { prices, type Quote } from "../../src/domain/pricing.ts"
import { defineOperation } from "../../src/operations/Operation.ts"

/** `cost` credits, or with a search `limit` the price of a people search of that limit. */
const echoPrice = (cost: number, limit: number | undefined): Quote =>
  limit !== undefined
    ? prices.searchPeople(limit)
    : { credits: cost, lines: [{ item: "echo", credits: cost }] }

/**
 * Operations that exercise the metering pipeline without any upstream: the price, refunds,
 * failures and duration of each call come from its parameters.
 */
export const echo = defineOperation({
  id: "testEcho",
  summary: "Echo (test)",
  platform: "profnet",
  path: "/profnet/test-echo",
  kind: "echo",
  description: "Test operation.",
  common: true,
  params: Schema.Struct({
    value: Schema.String,
    cost: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))),
    refund: Schema.optionalKey(Schema.Int),
    fail: Schema.optionalKey(Schema.Literals(["upstream", "not_found", "invalid", "defect"])),
    delay_ms: Schema.optionalKey(Schema.Int),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 30 }))),
    cursor: Schema.optionalKey(Schema.String)
  }),
  data: Schema.Struct({ value: Schema.String }),
  price: { rule: echoPrice, summary: "cost credits (default 4); with limit, a people search's price." },
  prepare: (params, price) =>
    params.value === "bad"
      ? Effect.fail(new InvalidInput({ message: "value must not be 'bad'", param: "value" }))
      : params.value === "defect-in-prepare"
        ? Effect.die(new Error("simulated defect before the call is reserved"))
        : Effect.succeed({
            args: params,
            quote: price(params.cost ?? 4, params.limit),
            searchLimit: params.limit,
            continuation: params.cursor !== undefined
          }),
  run: (args, context) =>
    Effect.gen(function* () {
      if (args.delay_ms !== undefined) yield* Effect.sleep(args.delay_ms)
      switch (args.fail) {
        case "upstream":
          return yield* new UpstreamUnavailable({ message: "simulated outage", retry_after_seconds: 3 })
        case "not_found":
          return yield* new NotFound({ message: "no such thing" })
        case "invalid":
          return yield* new InvalidInput({ message: "anonymous profile", param: "value" })
        case "defect":
          return yield* Effect.die(new Error("simulated defect"))
      }
      return {
        data: { value: args.value },
        refunds:
          args.refund === undefined ? [] : [{ reason: "fewer_results" as const, credits: args.refund }],
        served: context.freshness,
        fetchedAt: yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      }
    })
})

export const forumEcho = defineOperation({
  ...echo,
  id: "testForumEcho",
  summary: "Echo on the forum (test)",
  platform: "forum",
  path: "/forum/test-echo"
})

export const resolveEcho = defineOperation({
  ...echo,
  id: "testResolve",
  summary: "Resolve (test)",
  path: "/profnet/test-resolve",
  common: false,
  params: Schema.Struct({ value: Schema.String }),
  price: { rule: prices.resolveUrl, summary: "2 credits." },
  prepare: (params, price) => Effect.succeed({ args: params, quote: price() })
})

export const testOperations = [echo, forumEcho, resolveEcho]
