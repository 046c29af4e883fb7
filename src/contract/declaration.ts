import type { Schema } from "effect"
import type { Platform } from "../domain/plans.ts"
import type { Quote } from "../domain/pricing.ts"

/** A price rule: what a call is quoted from what validation made of its parameters. */
export type AnyRule = (...inputs: never) => Quote

/** How an operation is priced: the rule (one of `src/domain/pricing.ts`) and the same in a sentence. */
export interface Price<Rule extends AnyRule = AnyRule> {
  readonly rule: Rule
  /** The price as a caller reads it (OpenAPI `x-price`); the description says it in context too. */
  readonly summary: string
}

/**
 * What the contract says of one data operation: its name, route, parameters, data, envelope kind
 * and price. REST routes, OpenAPI, MCP tools and typed clients derive from declarations; the
 * implementation (validation, quote, upstream call) is attached in `src/operations/`.
 */
export interface OperationDeclaration<
  Id extends string = string,
  Path extends `/${string}` = `/${string}`,
  Fields extends Schema.Struct.Fields = Schema.Struct.Fields,
  Data extends Schema.Top = Schema.Top,
  Common extends boolean = boolean,
  P extends Platform = Platform,
  Rule extends AnyRule = AnyRule
> {
  readonly id: Id
  readonly platform: P
  readonly path: Path
  readonly kind: string
  /** A few words naming what the operation does (OpenAPI `summary`, the docs' sidebar). */
  readonly summary: string
  /**
   * Written with the default hosts (`defaultHosts`), as are the parameters' descriptions; the
   * surfaces name the configured hosts instead (`rehost`) when they build OpenAPI and MCP tools.
   */
  readonly description: string
  /** The operation's own parameters, as decoded types; REST reads them from strings, MCP from JSON. */
  readonly params: Schema.Struct<Fields>
  /**
   * Parameter values that answer with data in the default simulated world (`WORLD_SEED=svc-world-1`),
   * as decoded types: the OpenAPI parameters' examples, so the docs' request samples work as sent.
   */
  readonly examples?: Partial<Schema.Struct.Type<Fields>>
  /** Accepts `freshness` and `max_credits` (every data call but the resolve operations). */
  readonly common: Common
  readonly data: Data
  readonly price: Price<Rule>
}

export type AnyDeclaration = OperationDeclaration<
  string,
  `/${string}`,
  Schema.Struct.Fields,
  Schema.Top,
  boolean,
  Platform,
  AnyRule
>

/** A declaration, its id, path, platform, `common` and price rule kept as literal types. */
export const declareOperation = <
  const Id extends string,
  const Path extends `/${string}`,
  Fields extends Schema.Struct.Fields,
  Data extends Schema.Top,
  const Common extends boolean,
  const P extends Platform,
  Rule extends AnyRule
>(
  declaration: OperationDeclaration<Id, Path, Fields, Data, Common, P, Rule>
): OperationDeclaration<Id, Path, Fields, Data, Common, P, Rule> => declaration
