import type { OpenApi } from "effect/http-api"

interface Route {
  readonly pattern: RegExp
  readonly methods: ReadonlyArray<string>
}

const routesOf = (spec: OpenApi.OpenAPISpec): ReadonlyArray<Route> =>
  Object.entries(spec.paths).map(([path, item]) => ({
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}/]+\}/g, "[^/]+")}/?$`),
    methods: Object.keys(item as object)
      .filter((key) => ["get", "post", "put", "patch", "delete"].includes(key))
      .map((key) => key.toUpperCase())
  }))

/**
 * For a request no route takes: the methods the API does take at that path, from its OpenAPI
 * document (`GET /v1/keys/mint` → `["POST"]`). An unknown route stays NOT_FOUND (one of the 17
 * codes); naming the right method turns a dead end into the next step. The document is asked for
 * at the first such request, not at start-up, where building it was a tenth of a second.
 */
export const methodsAt = (spec: () => OpenApi.OpenAPISpec) => {
  let routes: ReadonlyArray<Route> | undefined
  return (path: string): ReadonlyArray<string> => {
    routes ??= routesOf(spec())
    return routes.filter((route) => route.pattern.test(path)).flatMap((route) => route.methods)
  }
}
