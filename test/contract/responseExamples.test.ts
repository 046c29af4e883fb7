import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { generateResponseExamples } from "../../bench/responseExamples.ts"
import { envelopeOf, ReceiptSchema } from "../../src/contract/envelope.ts"
import type { ErrorCode } from "../../src/contract/errors.ts"
import { responseExamples } from "../../src/contract/examples/index.ts"
import { defaultPublication, openApiDocument, type Publication } from "../../src/contract/openapi.ts"
import { declarations } from "../../src/contract/operations/index.ts"
import { problemSchemas } from "../../src/contract/problemSchemas.ts"
import { MintResponse, ReceiptPage, Usage } from "../../src/contract/schemas.ts"

/** Decodes `example` as a client reading it off the wire would, refusing members the schema does not name. */
const decodes = (schema: Schema.Top, example: unknown, what: string) =>
  Schema.decodeUnknownEffect(Schema.toCodecJson(schema) as unknown as Schema.Codec<unknown, unknown>)(
    example,
    {
      onExcessProperty: "error",
      errors: "all"
    }
  ).pipe(
    Effect.mapError((error) => new Error(`${what}: ${error.message}`)),
    Effect.asVoid
  )

const accountSchemas: Record<string, Schema.Top> = {
  mintKey: MintResponse,
  get_usage: Usage,
  listReceipts: ReceiptPage,
  getReceipt: ReceiptSchema
}

type Json = Record<string, any>

/** Every media type object of a published document's responses, with where it is. */
const responseMedia = (spec: Json) =>
  Object.entries(spec.paths as Json).flatMap(([path, item]) =>
    Object.values(item as Json).flatMap((operation: Json) =>
      Object.entries(operation.responses as Json).flatMap(([status, response]) =>
        Object.entries((response.content ?? {}) as Json).map(([type, media]) => ({
          where: `${operation.operationId} ${status} ${type} (${path})`,
          operationId: operation.operationId as string,
          status,
          media: media as Json
        }))
      )
    )
  )

const other: Publication = {
  ...defaultPublication,
  baseUrl: "https://data.example.org",
  upgradeUrl: "https://pay.example.org/buy?from=docs",
  hosts: { profnet: "pn.example.net", forum: "fo.example.net", microblog: "mb.example.net" }
}

describe("OpenAPI response examples", () => {
  it.effect(
    "the stored examples are what the service answers today (npm run examples regenerates them)",
    () =>
      Effect.gen(function* () {
        // Compared as values (the file's layout is Biome's). Ids, secrets and times are seeded, so
        // equal means equal.
        const answered = JSON.parse(
          JSON.stringify(yield* generateResponseExamples)
        ) as typeof responseExamples
        const drifted = (name: string) =>
          `${name}: the service answers otherwise now; run \`npm run examples\``
        for (const [name, example] of Object.entries(responseExamples.data))
          assert.deepStrictEqual(answered.data[name], example, drifted(name))
        for (const [name, example] of Object.entries(responseExamples.account))
          assert.deepStrictEqual(answered.account[name], example, drifted(name))
        assert.deepStrictEqual(answered, responseExamples)
      }),
    120_000
  )

  it.effect("each example decodes with its operation's own success schema, and nothing more", () =>
    Effect.gen(function* () {
      assert.strictEqual(Object.keys(responseExamples.data).length, declarations.length)
      for (const declaration of declarations)
        yield* decodes(
          envelopeOf(declaration.kind, declaration.data),
          responseExamples.data[declaration.id],
          declaration.id
        )
      for (const [operationId, schema] of Object.entries(accountSchemas))
        yield* decodes(schema, responseExamples.account[operationId], operationId)
    })
  )

  it.effect(
    "each problem example decodes with its code's wire schema, for the default and another publication",
    () =>
      Effect.gen(function* () {
        for (const publication of [defaultPublication, other]) {
          const spec = openApiDocument(declarations, publication) as unknown as Json
          const examples = spec.components.examples as Record<string, { readonly value: Json }>
          const codes = new Set<string>()
          for (const { value } of Object.values(examples)) {
            codes.add(value.code)
            assert.isTrue(value.doc_url.startsWith(`${publication.baseUrl}/docs/errors#`), value.code)
            yield* decodes(problemSchemas[value.code as ErrorCode], value, value.code)
          }
          assert.strictEqual(codes.size, Object.keys(problemSchemas).length)
        }
      })
  )

  it("the published document carries them on every data, account and problem response", () => {
    const spec = openApiDocument(declarations) as unknown as Json
    const media = responseMedia(spec)
    for (const declaration of declarations) {
      const ok = media.find((entry) => entry.operationId === declaration.id && entry.status === "200")
      assert.deepStrictEqual(
        ok?.media.examples?.answer?.value,
        responseExamples.data[declaration.id],
        declaration.id
      )
    }
    for (const operationId of Object.keys(accountSchemas)) {
      const ok = media.find((entry) => entry.operationId === operationId && entry.status === "200")
      assert.deepStrictEqual(
        ok?.media.examples?.answer?.value,
        responseExamples.account[operationId],
        operationId
      )
    }
    for (const entry of media.filter(({ where }) => where.includes("application/problem+json"))) {
      const schema = entry.media.schema as Json
      const refs = ((schema.anyOf ?? [schema]) as ReadonlyArray<Json>).map((branch) => branch.$ref)
      const examples = Object.values(entry.media.examples ?? {}) as ReadonlyArray<Json>
      assert.deepStrictEqual(
        examples.map((example) => example.$ref.replace("/examples/", "/schemas/")),
        refs,
        entry.where
      )
    }
  })

  it("they name the published base URL, upgrade URL and hosts, never the defaults they were taken at", () => {
    const spec = openApiDocument(declarations, other) as unknown as Json
    const examples = JSON.stringify([
      responseMedia(spec).map(({ media }) => media.examples ?? null),
      spec.components.examples
    ])
    for (const stale of ["127.0.0.1", "profnet.com", "forum.com", "microblog.com"])
      assert.notInclude(examples, stale)
    for (const published of [other.baseUrl, other.hosts.profnet, other.hosts.forum, other.hosts.microblog])
      assert.include(examples, published)
    assert.include(examples, `${other.upgradeUrl}&account=${responseExamples.account.mintKey.account_id}`)
  })
})
