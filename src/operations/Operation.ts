import { Effect, type Schema } from "effect"
import type { AnyDeclaration, AnyRule, OperationDeclaration } from "../contract/declaration.ts"
import type { InvalidInput, NotFound, PayloadTooLarge, UpstreamUnavailable } from "../contract/errors.ts"
import type { Freshness, Served } from "../domain/freshness.ts"
import type { Platform } from "../domain/plans.ts"
import type { Quote, Refund } from "../domain/pricing.ts"

export type { Freshness, Served }

/** What validation makes of a call's parameters before anything is reserved. */
export interface Prepared<Args> {
  /** Canonical arguments: defaults filled, identifiers cleaned, lists sorted. The fingerprint and the fetch use them. */
  readonly args: Args
  /** The base quote, before the realtime surcharge. */
  readonly quote: Quote
  /** The search page size, for the trial cap. */
  readonly searchLimit?: number | undefined
  /** A continuation page (`cursor` given): trial keys get first pages only. */
  readonly continuation?: boolean | undefined
}

export interface RunContext {
  readonly freshness: Freshness
}

export interface RunResult {
  readonly data: unknown
  readonly refunds: ReadonlyArray<Refund>
  readonly served: Served
  readonly fetchedAt: number
}

export type RunError = UpstreamUnavailable | NotFound | InvalidInput | PayloadTooLarge

/**
 * What an implementation provides, as generator functions: `*prepare` quotes with the declared
 * price rule, `*run` fetches. `implement` makes each an Effect function once (`Effect.fnUntraced`),
 * so a call runs a generator of that one function. A fresh `Effect.gen(function* () {...})` per
 * call made a generator function per call, and V8 gives each one's prototype object hidden classes
 * of its own, in the old generation, that keep the call's objects from dying young
 * (docs/performance.md, round 22).
 */
export interface Implementation<Params, Args, R, Rule extends AnyRule = AnyRule> {
  /** Validate, clean identifiers and quote the call with `price`, the declaration's rule. */
  readonly prepare: (params: Params, price: Rule) => Effect.fn.Return<Prepared<Args>, InvalidInput>
  /** The upstream call through the cache. */
  readonly run: (args: Args, context: RunContext) => Effect.fn.Return<RunResult, RunError, R>
}

/** The same as functions that return an effect, for operations that exist only in tests. */
export interface EffectImplementation<Params, Args, R, Rule extends AnyRule = AnyRule> {
  readonly prepare: (params: Params, price: Rule) => Effect.Effect<Prepared<Args>, InvalidInput>
  readonly run: (args: Args, context: RunContext) => Effect.Effect<RunResult, RunError, R>
}

/**
 * One data operation: its declaration `D` (the contract) and its implementation, `prepare`
 * (validate, clean identifiers, quote) and `run` (the upstream call through the cache).
 */
export type Operation<D extends AnyDeclaration, Args, R> = D & {
  readonly prepare: (params: D["params"]["Type"]) => Effect.Effect<Prepared<Args>, InvalidInput>
  readonly run: (args: Args, context: RunContext) => Effect.Effect<RunResult, RunError, R>
  /**
   * Its run reads upstream data only through the `Cache` (and `Domains`), nothing else: so the
   * metered path may run it on stored copies before anything is held (see `Speculation`).
   */
  readonly speculative: boolean
}

/** Any operation needing `R`: a registry holds operations of every parameter and argument type. */
export type AnyOperation<R = any> = AnyDeclaration & {
  readonly prepare: (params: any) => Effect.Effect<Prepared<any>, InvalidInput>
  readonly run: (args: any, context: RunContext) => Effect.Effect<RunResult, RunError, R>
  readonly speculative: boolean
}

/**
 * A declared operation with its implementation; the quote comes from the declared price rule. The
 * registry's operations fetch through the cache (`fetchVia`), so they are speculative.
 */
export const implement = <D extends AnyDeclaration, Args, R>(
  declaration: D,
  implementation: Implementation<D["params"]["Type"], Args, R, D["price"]["rule"]>,
  speculative = true
): Operation<D, Args, R> =>
  withEffects(
    declaration,
    {
      prepare: Effect.fnUntraced(implementation.prepare),
      run: Effect.fnUntraced(implementation.run)
    },
    speculative
  )

const withEffects = <D extends AnyDeclaration, Args, R>(
  declaration: D,
  implementation: EffectImplementation<D["params"]["Type"], Args, R, D["price"]["rule"]>,
  speculative: boolean
): Operation<D, Args, R> => ({
  ...declaration,
  prepare: (params) => implementation.prepare(params, declaration.price.rule),
  run: implementation.run,
  speculative
})

/**
 * A declaration and its implementation in one object, for operations that exist only in tests
 * (their ids and paths are not kept as literal types: no typed client calls them). They run their
 * own upstream (sleeps, failures), so they are not speculative unless they say so.
 */
export const defineOperation = <Fields extends Schema.Struct.Fields, Rule extends AnyRule, Args, R>(
  operation: TestDeclaration<Fields, Rule> &
    EffectImplementation<Schema.Struct<Fields>["Type"], Args, R, Rule> & { readonly speculative?: boolean }
): Operation<TestDeclaration<Fields, Rule>, Args, R> =>
  withEffects<TestDeclaration<Fields, Rule>, Args, R>(operation, operation, operation.speculative ?? false)

type TestDeclaration<Fields extends Schema.Struct.Fields, Rule extends AnyRule> = OperationDeclaration<
  string,
  `/${string}`,
  Fields,
  Schema.Top,
  boolean,
  Platform,
  Rule
>
