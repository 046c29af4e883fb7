import { Schema, SchemaGetter, Struct } from "effect"
import { ForumRange, ForumSearchType, ForumSort, MicroblogSort } from "../contract/records.ts"

/**
 * The upstream interface's own notions: absence, paging, and the requests of its lookups. Its
 * answers are the contract's records (`src/contract/records.ts`); requests and answers cross an
 * HTTP provider contract as JSON, so absent values are null on the wire.
 */

const Count = Schema.Int
const Str = Schema.String
const NullStr = Schema.NullOr(Schema.String)

// ---------------------------------------------------------------- absence and paging

/**
 * A value that may be absent: undefined in process (as the world answers and operations test
 * for it), null on the wire, where JSON has no undefined.
 */
export const Absent = <S extends Schema.Constraint>(schema: S) =>
  Schema.NullOr(schema).pipe(
    Schema.decodeTo(Schema.UndefinedOr(Schema.toType(schema)), {
      decode: SchemaGetter.transform((value) => (value === null ? undefined : value)),
      encode: SchemaGetter.transform((value) => (value === undefined ? null : value))
    })
  )

/** A paged lookup's answer when the cursor was not issued for this very query (or world). */
export const InvalidCursor = "invalid_cursor" as const
export type InvalidCursor = typeof InvalidCursor

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
  readonly total_matches?: number
}

/** Cursors are opaque to callers; `next_cursor` is null on the last page or at the depth cap. */
export const Page = <S extends Schema.Constraint>(item: S) =>
  Schema.Struct({
    items: Schema.Array(item),
    next_cursor: NullStr,
    total_matches: Schema.optionalKey(Count)
  })

// ---------------------------------------------------------------- requests

export const PersonRef = Schema.Union([Schema.Struct({ slug: Str }), Schema.Struct({ urn: Str })])
export type PersonRef = typeof PersonRef.Type

export const CompanyRef = Schema.Union([Schema.Struct({ slug: Str }), Schema.Struct({ domain: Str })])
export type CompanyRef = typeof CompanyRef.Type

/** Defaults: type `posts`, sort `relevance`, range `all_time`. */
export const ForumSearchQuery = Schema.Struct({
  query: Str,
  type: Schema.optionalKey(ForumSearchType),
  sort: Schema.optionalKey(ForumSort),
  range: Schema.optionalKey(ForumRange)
})
export type ForumSearchQuery = typeof ForumSearchQuery.Type

export const MicroblogSearchQuery = Schema.Struct({ query: Str, sort: Schema.optionalKey(MicroblogSort) })
export type MicroblogSearchQuery = typeof MicroblogSearchQuery.Type

export const MicroblogProfileRef = Schema.Union([Schema.Struct({ handle: Str }), Schema.Struct({ id: Str })])
export type MicroblogProfileRef = typeof MicroblogProfileRef.Type

/** Every filter is optional; company filters take a name, slug, numeric id or company URN. */
export const PeopleQuery = Schema.Struct(
  Struct.map(Schema.optionalKey)({
    keywords: Str,
    first_name: Str,
    last_name: Str,
    title: Str,
    school: Str,
    current_company: Str,
    past_company: Str
  })
)
export type PeopleQuery = typeof PeopleQuery.Type
