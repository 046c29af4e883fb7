import { OpenApi } from "effect/http-api"
import { rehostJson } from "../domain/identifiers/index.ts"
import { type Api, makeApi } from "./api.ts"
import type { AnyDeclaration } from "./declaration.ts"
import { withResponseExamples } from "./examples/publish.ts"
import { defaultPublication, type Publication } from "./publication.ts"

export { defaultPublication, type Publication }

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

type Json = Record<string, any>

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
        withResponseExamples(
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
