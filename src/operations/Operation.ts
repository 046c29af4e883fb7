import type { Effect, Schema } from "effect"
import type { InvalidInput, NotFound, PayloadTooLarge, UpstreamUnavailable } from "../contract/errors.ts"
import type { OperationDeclaration } from "../contract/operation.ts"
import type { Platform } from "../domain/plans.ts"
import type { Quote, Refund } from "../domain/pricing.ts"

export type Freshness = "recent" | "realtime"
export type Served = "recent" | "realtime" | "cached_fallback"

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
 * One data operation: its declaration (the contract) and its implementation, `prepare` (validate,
 * clean identifiers, quote) and `run` (the upstream call through the cache).
 */
export interface Operation<
  Fields extends Schema.Struct.Fields = Schema.Struct.Fields,
  Args = unknown,
  R = never,
  Id extends string = string,
  Path extends `/${string}` = `/${string}`,
  Data extends Schema.Top = Schema.Top,
  Common extends boolean = boolean,
  P extends Platform = Platform
> extends OperationDeclaration<Id, Path, Fields, Data, Common, P> {
  readonly prepare: (params: Schema.Struct<Fields>["Type"]) => Effect.Effect<Prepared<Args>, InvalidInput>
  readonly run: (args: Args, context: RunContext) => Effect.Effect<RunResult, RunError, R>
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every parameter and argument type
export type AnyOperation<R = any> = Operation<
  any,
  any,
  R,
  string,
  `/${string}`,
  Schema.Top,
  boolean,
  Platform
>

export const defineOperation = <
  Fields extends Schema.Struct.Fields,
  Args,
  R,
  const Id extends string,
  const Path extends `/${string}`,
  Data extends Schema.Top,
  const Common extends boolean,
  const P extends Platform
>(
  operation: Operation<Fields, Args, R, Id, Path, Data, Common, P>
): Operation<Fields, Args, R, Id, Path, Data, Common, P> => operation
