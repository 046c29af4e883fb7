import { OpenApi } from "effect/http-api"
import { defaultRefundPolicy } from "../config.ts"
import { defaultHosts, type Hosts, rehostJson } from "../domain/identifiers.ts"
import type { Pack } from "../domain/plans.ts"
import { defaultPolicy } from "../domain/policy.ts"
import { type Api, makeApi } from "./api.ts"
import type { AnyDeclaration } from "./declaration.ts"
import { type ErrorCode, errorCatalog, errorClasses } from "./errors.ts"
import { problemExamples, responseExamples } from "./examples/index.ts"
import { problemContext, toProblem } from "./problem.ts"

/**
 * Where the published contract says it lives, the platform hosts it names, and what its problem
 * examples offer (upgrade URL, rails, packs, refund policy). `AppConfig` is one.
 */
export interface Publication {
  readonly baseUrl: string
  readonly hosts: Hosts
  readonly upgradeUrl: string
  readonly checkoutRails: ReadonlyArray<string>
  readonly refundPolicy: string
  readonly policy: { readonly packs: ReadonlyArray<Pack> }
}

/** A service started with no configuration (`npm run lint:openapi` lints its document). */
export const defaultPublication: Publication = {
  baseUrl: "http://127.0.0.1:8787",
  hosts: defaultHosts,
  upgradeUrl: "http://127.0.0.1:8787/upgrade",
  checkoutRails: ["local"],
  refundPolicy: defaultRefundPolicy,
  policy: defaultPolicy
}

/**
 * `Schema.Int` documents itself as bounded by ±2^53-1, and a docs renderer that makes up examples
 * from `minimum` then shows -9007199254740991 as a follower count. Those bounds say no more than
 * "a JSON integer", so they are left out; bounds a schema sets itself (`limit`, `max_credits`) stay.
 */
const withoutSafeIntegerBounds = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutSafeIntegerBounds)
  if (node === null || typeof node !== "object") return node
  const { minimum, maximum, ...rest } = node as Record<string, unknown>
  const safeIntegerOnly = minimum === Number.MIN_SAFE_INTEGER && maximum === Number.MAX_SAFE_INTEGER
  const kept = safeIntegerOnly ? rest : (node as Record<string, unknown>)
  return Object.fromEntries(
    Object.entries(kept).map(([key, value]) => [key, withoutSafeIntegerBounds(value)])
  )
}

/**
 * The stored examples were taken at `responseExamples.baseUrl` with its default upgrade URL; a
 * string of theirs names the published base and upgrade URLs instead.
 */
const rebase = (publication: Publication): ((node: unknown) => unknown) => {
  const stored = responseExamples.baseUrl
  const upgrade = publication.upgradeUrl
  const text = (value: string) =>
    value
      .replaceAll(`${stored}/upgrade?`, `${upgrade}${upgrade.includes("?") ? "&" : "?"}`)
      .replaceAll(`${stored}/upgrade`, upgrade)
      .replaceAll(stored, publication.baseUrl)
  const walk = (node: unknown): unknown =>
    typeof node === "string"
      ? text(node)
      : Array.isArray(node)
        ? node.map(walk)
        : node !== null && typeof node === "object"
          ? Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, walk(inner)]))
          : node
  return stored === publication.baseUrl && upgrade === `${stored}/upgrade` ? (node) => node : walk
}

type Json = Record<string, any>

/** The components/examples name of a code's problem example. */
const problemExampleName = (code: ErrorCode) => `Problem${errorClasses[code].identifier}`

/** The schema reference a code's problem responses carry (see `problemSchemas`), back to its code. */
const codeOfProblemSchema = new Map(
  (Object.keys(errorClasses) as ReadonlyArray<ErrorCode>).map((code) => [
    `#/components/schemas/Problem${errorClasses[code].identifier}`,
    code
  ])
)

/** The codes a problem response documents: one schema reference, or several under `anyOf` (one status). */
const codesOf = (schema: Json | undefined): ReadonlyArray<ErrorCode> =>
  ((schema?.anyOf as ReadonlyArray<Json> | undefined) ?? (schema === undefined ? [] : [schema])).flatMap(
    (branch) => {
      const code = codeOfProblemSchema.get(branch.$ref)
      return code === undefined ? [] : [code]
    }
  )

/**
 * Every response gets its example: the stored answers (mint, usage, receipts, data operations; the
 * data operations' are attached by `documentOperation`) rebased to the published URLs, and each problem
 * response the example of its code, rendered by `toProblem` for this publication and kept once
 * under components/examples.
 */
const withExamples = (spec: Json, publication: Publication): Json => {
  const toPublished = rebase(publication)
  const stored: Record<string, unknown> = responseExamples.account
  const context = problemContext(publication)
  const errors = problemExamples(responseExamples.account.mintKey.account_id, publication.baseUrl)
  const used = new Set<ErrorCode>()
  const paths = Object.fromEntries(
    Object.entries(spec.paths as Json).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as Json).map(([method, operation]) => {
          const responses = Object.fromEntries(
            Object.entries((operation as Json).responses ?? {}).map(([status, response]) => {
              const content = (response as Json).content as Json | undefined
              if (content === undefined) return [status, response]
              const json = content["application/json"] as Json | undefined
              const problem = content["application/problem+json"] as Json | undefined
              const example = json?.example ?? (status === "200" ? stored[operation.operationId] : undefined)
              const codes = codesOf(problem?.schema)
              for (const code of codes) used.add(code)
              return [
                status,
                {
                  ...(response as Json),
                  content: {
                    ...content,
                    ...(json === undefined || example === undefined
                      ? {}
                      : { "application/json": { ...json, example: toPublished(example) } }),
                    ...(problem === undefined || codes.length === 0
                      ? {}
                      : {
                          "application/problem+json": {
                            ...problem,
                            examples: Object.fromEntries(
                              codes.map((code) => [
                                code,
                                { $ref: `#/components/examples/${problemExampleName(code)}` }
                              ])
                            )
                          }
                        })
                  }
                }
              ]
            })
          )
          return [method, { ...(operation as Json), responses }]
        })
      )
    ])
  )
  const examples = Object.fromEntries(
    [...used].map((code) => [
      problemExampleName(code),
      { summary: `${code}: ${errorCatalog[code].title}`, value: toProblem(errors[code], context) }
    ])
  )
  return { ...spec, paths, components: { ...spec.components, examples } }
}

/**
 * The `/v1` contract as published at `/v1/openapi.json` and `/docs`: its server is the configured
 * base URL, the platforms are named by the configured hosts, the contact is the docs page, and
 * each response has a real example.
 */
export const publishedApi = <D extends AnyDeclaration>(api: Api<D>, publication: Publication): Api<D> =>
  api
    .annotate(OpenApi.Servers, [{ url: publication.baseUrl, description: "This service" }])
    .annotate(OpenApi.Transform, (spec) =>
      rehostJson(
        publication.hosts,
        withExamples(
          {
            ...(withoutSafeIntegerBounds(spec) as Json),
            info: { ...spec.info, contact: { name: "API documentation", url: `${publication.baseUrl}/docs` } }
          },
          publication
        )
      )
    )

/** The OpenAPI document of a registry of declarations, as a service published at `publication` serves it. */
export const openApiDocument = (
  declarations: ReadonlyArray<AnyDeclaration>,
  publication: Publication = defaultPublication
): OpenApi.OpenAPISpec => OpenApi.fromApi(publishedApi(makeApi(declarations), publication))
