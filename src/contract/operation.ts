import type { Schema } from "effect"
import type { Platform } from "../domain/plans.ts"

/**
 * What the contract says of one data operation: its name, route, parameters, data and envelope
 * kind. REST routes, OpenAPI, MCP tools and typed clients derive from declarations; the
 * implementation (validation, quote, upstream call) is attached elsewhere (`src/operations/`).
 */
export interface OperationDeclaration<
  Id extends string = string,
  Path extends `/${string}` = `/${string}`,
  Fields extends Schema.Struct.Fields = Schema.Struct.Fields,
  Data extends Schema.Top = Schema.Top,
  Common extends boolean = boolean,
  P extends Platform = Platform
> {
  readonly id: Id
  readonly platform: P
  readonly path: Path
  readonly kind: string
  readonly description: string
  /** The operation's own parameters, as decoded types; REST reads them from strings, MCP from JSON. */
  readonly params: Schema.Struct<Fields>
  /** Accepts `freshness` and `max_credits` (every data call but the resolve operations). */
  readonly common: Common
  readonly data: Data
}

export type AnyDeclaration = OperationDeclaration<
  string,
  `/${string}`,
  Schema.Struct.Fields,
  Schema.Top,
  boolean
>
