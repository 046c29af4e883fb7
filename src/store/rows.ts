/**
 * Column schemas shared by every table, and the one way a service reads rows: through a schema,
 * compiled once. The two stores disagree on some types (int8 is a number on PGlite and on our
 * PgClient when it is safe, a bigint beyond 2^53; numeric, such as SUM of a bigint, is a string on
 * both), so integer columns accept any of them and come out as a safe integer.
 */
import { Data, Effect, Schema, SchemaTransformation } from "effect"
import { plans, platforms } from "../domain/plans.ts"

const IntegerText = Schema.String.check(Schema.isPattern(/^-?\d+$/))

/** int2/int4/int8/numeric integer: number, bigint or digits in, a safe integer (number) out. */
export const Int = Schema.Union([Schema.Number, Schema.BigInt, IntegerText]).pipe(
  Schema.decodeTo(
    Schema.Int,
    SchemaTransformation.transform({ decode: (value) => Number(value), encode: (value) => value })
  )
)

export const NullableInt = Schema.NullOr(Int)

export const Plan = Schema.Literals(plans)

export const Platform = Schema.Literals(platforms)

/** A comma-separated list of platforms (`accounts.entitlements`); empty text is none. */
export const Platforms = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String),
    SchemaTransformation.transform<ReadonlyArray<string>, string>({
      decode: (text) => text.split(",").filter((platform) => platform.length > 0),
      encode: (list) => list.join(",")
    })
  ),
  Schema.decodeTo(Schema.Array(Platform), SchemaTransformation.passthroughSupertype())
)

/**
 * A row the code cannot read: the database holds something this version does not expect (a
 * migration not applied, a value written by hand). A defect, never an answer built from a guess.
 */
export class UnreadableRow extends Data.TaggedError("UnreadableRow")<{
  readonly row: string
  readonly message: string
}> {}

/**
 * Decodes every row with `schema`; `row` names what is read, for the defect's message. The
 * decoders are compiled here, once, and the common results (no row, one row) skip the list's own
 * decoding: this runs for nearly every statement of a metered call.
 * Use: `sql\`...\`.pipe(Effect.flatMap(decodeCalls))`.
 */
export const decoder = <S extends Schema.ConstraintDecoder<unknown>>(schema: S, row: string) => {
  const decodeOne = Schema.decodeUnknownResult(schema)
  const decodeAll = Schema.decodeUnknownResult(Schema.Array(schema))
  const unreadable = (issue: Schema.SchemaError) =>
    Effect.die(new UnreadableRow({ row, message: `${row}: ${issue.message}` }))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<S["Type"]>> => {
    if (rows.length === 0) return Effect.succeed([])
    if (rows.length === 1) {
      const one = decodeOne(rows[0])
      return one._tag === "Success" ? Effect.succeed([one.success]) : unreadable(one.failure)
    }
    const all = decodeAll(rows)
    return all._tag === "Success" ? Effect.succeed(all.success) : unreadable(all.failure)
  }
}
