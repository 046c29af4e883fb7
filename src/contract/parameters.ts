import { Schema, SchemaGetter } from "effect"

/** A comma-separated list in the query string (form style, not exploded), of `item` values. */
export const CommaList = <S extends Schema.Top & { readonly Type: string; readonly Encoded: string }>(
  item: S
) =>
  Schema.String.pipe(
    Schema.decodeTo(Schema.Array(item), {
      decode: SchemaGetter.transform((text: string) =>
        text
          .split(",")
          .map((part) => part.trim())
          .filter((part) => part.length > 0)
      ),
      encode: SchemaGetter.transform((items: ReadonlyArray<string>) => items.join(","))
    })
  )

/** The continuation parameter of a paged operation. */
export const cursorParam = (description = "From a previous page.") =>
  Schema.optionalKey(Schema.String).annotate({ description })
