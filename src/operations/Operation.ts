import type { Effect, Schema } from "effect"
import type { InvalidInput, NotFound, PayloadTooLarge, UpstreamUnavailable } from "../contract/errors.ts"
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
 * One data operation, declared once: REST routes, MCP tools, OpenAPI and docs derive from it.
 * `params` holds the operation's own parameters (the decoded types; REST reads them from the
 * query string through Schema's string codec, MCP from JSON arguments).
 */
export interface Operation<
  Fields extends Schema.Struct.Fields = Schema.Struct.Fields,
  Args = unknown,
  R = never
> {
  readonly id: string
  readonly platform: Platform
  readonly path: `/${string}`
  readonly kind: string
  readonly description: string
  readonly params: Schema.Struct<Fields>
  /** Accepts `freshness` and `max_credits` (every data call but the resolve operations). */
  readonly common: boolean
  readonly data: Schema.Top
  readonly prepare: (params: Schema.Struct<Fields>["Type"]) => Effect.Effect<Prepared<Args>, InvalidInput>
  readonly run: (args: Args, context: RunContext) => Effect.Effect<RunResult, RunError, R>
}

export type AnyOperation<R = any> = Operation<any, any, R>

export const defineOperation = <Fields extends Schema.Struct.Fields, Args, R>(
  operation: Operation<Fields, Args, R>
): Operation<Fields, Args, R> => operation
