import { Console, Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { restQuerySchema } from "../../contract/api.ts"
import type { AnyDeclaration } from "../../contract/declaration.ts"
import { declarations } from "../../contract/operations/index.ts"
import { platforms } from "../../domain/plans.ts"
import type { Usage } from "../sdk/usage.ts"
import { dim, human, printJson, withSpinner } from "./output.ts"
import { UsageError, withKey } from "./session.ts"

const kebab = (text: string) =>
  text
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/_/g, "-")
    .toLowerCase()

/**
 * The subcommand name of an operation under its platform: its id without `get` and without the
 * platform's own name (`getProfile` -> `profile`, `resolveForumUrl` -> `resolve-url`,
 * `searchPeople` -> `search-people`). The id itself is an alias.
 */
export const commandName = (operation: AnyDeclaration) =>
  kebab(operation.id)
    .split("-")
    .filter((word, i) => !(i === 0 && word === "get") && word !== operation.platform)
    .join("-")

interface FieldDoc {
  readonly type?: string
  readonly description?: string
}

const fieldDocs = (operation: AnyDeclaration): Record<string, FieldDoc> =>
  (
    Schema.toJsonSchemaDocument(Schema.toType(operation.params)).schema as {
      readonly properties?: Record<string, FieldDoc>
    }
  ).properties ?? {}

/** Flags for each parameter (kebab-case), the first parameter also as the positional argument. */
const dataCommand = (operation: AnyDeclaration) => {
  const names = Object.keys(operation.params.fields)
  const docs = fieldDocs(operation)
  const [first] = names
  const flags = Object.fromEntries(
    names.map((name) => {
      const doc = docs[name] ?? {}
      const flag =
        doc.type === "boolean"
          ? Flag.Boolean(kebab(name)).pipe(
              Flag.map((b): string => String(b)),
              Flag.optional
            )
          : doc.type === "integer"
            ? Flag.Int(kebab(name)).pipe(
                Flag.map((n): string => String(n)),
                Flag.optional
              )
            : Flag.String(kebab(name)).pipe(Flag.optional)
      return [name, doc.description ? Flag.withDescription(flag, doc.description) : flag]
    })
  ) as Record<string, Flag.Flag<Option.Option<string>>>
  const common = operation.common
    ? {
        maxCredits: Flag.Int("max-credits").pipe(
          Flag.withDescription("Refuse the call (nothing charged) if it would cost more credits."),
          Flag.optional
        ),
        realtime: Flag.Boolean("realtime").pipe(
          Flag.withDescription("Fetch live instead of cached (+2 credits, paid keys only)."),
          Flag.withoutNegation,
          Flag.withDefault(false)
        )
      }
    : {}
  const config = {
    ...flags,
    ...common,
    positional: Argument.String(kebab(first ?? "value")).pipe(
      Argument.withDescription(`The ${first} (same as --${kebab(first ?? "value")}).`),
      Argument.optional
    ),
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print the raw envelope as JSON."),
      Flag.withoutNegation,
      Flag.withDefault(false)
    )
  }
  return Command.make(commandName(operation), config, (input) =>
    Effect.gen(function* () {
      const values = input as unknown as Record<string, unknown>
      const query: Record<string, string> = {}
      for (const name of names) {
        const value = values[name] as Option.Option<string>
        if (Option.isSome(value)) query[name] = value.value
      }
      if (first !== undefined && Option.isSome(input.positional)) {
        if (query[first] !== undefined)
          return yield* new UsageError({
            message: `Give the ${first} once: as the argument or --${kebab(first)}.`
          })
        query[first] = input.positional.value
      }
      const maxCredits = values.maxCredits as Option.Option<number> | undefined
      if (maxCredits !== undefined && Option.isSome(maxCredits)) query.max_credits = String(maxCredits.value)
      if (values.realtime === true) query.freshness = "realtime"
      // The registry's parameter schemas need no services to decode (they are plain strings, ints, lists).
      const codec = restQuerySchema(operation) as unknown as Schema.Codec<unknown, unknown>
      const decoded = yield* Schema.decodeUnknownEffect(codec)(query).pipe(
        Effect.mapError((error) => new UsageError({ message: error.message }))
      )
      const { client } = yield* withKey
      const method = (
        client as unknown as Record<string, (request: unknown) => Effect.Effect<Envelope, unknown>>
      )[operation.id]!
      const { usage, ...envelope } = yield* withSpinner(operation.summary, method({ query: decoded }))
      if (input.json) yield* printJson(envelope)
      else yield* Console.log(human(envelope.data))
      yield* reportCost(envelope, usage)
    })
  ).pipe(
    Command.withDescription(`${operation.summary}. ${operation.price.summary}`),
    Command.withAlias(operation.id)
  )
}

interface Envelope {
  readonly usage?: Usage
  readonly data: unknown
  readonly cost: { readonly quoted: number; readonly charged: number; readonly refunded: number }
  readonly receipt: { readonly id: string; readonly replayed?: boolean }
  readonly freshness?: { readonly served?: string }
}

/** Cost, receipt and what is left (credits, the key's cap) on stderr, so stdout stays the data alone. */
export const reportCost = (envelope: Envelope, usage: Usage = {}) =>
  Console.error(
    dim(
      `cost ${envelope.cost.charged} credits (quoted ${envelope.cost.quoted}${
        envelope.cost.refunded > 0 ? `, refunded ${envelope.cost.refunded}` : ""
      }) · receipt ${envelope.receipt.id}${envelope.receipt.replayed ? " (replayed)" : ""}${
        envelope.freshness?.served ? ` · ${envelope.freshness.served}` : ""
      }${usage.credits_remaining === undefined ? "" : ` · ${usage.credits_remaining} credits left`}${
        usage.key_cap_remaining === undefined ? "" : ` · key cap ${usage.key_cap_remaining} left`
      }`,
      process.stderr
    )
  )

/** `svc <platform> <command>` for every operation of the registry. */
export const platformCommands = platforms.flatMap((platform) => {
  const operations = declarations.filter((operation) => operation.platform === platform)
  const [first, ...rest] = operations.map(dataCommand)
  if (first === undefined) return []
  return [
    Command.make(platform).pipe(
      Command.withDescription(`Data calls on ${platform}, priced in credits.`),
      Command.withSubcommands([first, ...rest])
    )
  ]
})
