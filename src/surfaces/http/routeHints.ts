import type { OpenApi } from "effect/http-api"

/**
 * For a request no route takes: the methods the API does take at that path, from its OpenAPI
 * document (`GET /v1/keys/mint` → `["POST"]`). An unknown route stays NOT_FOUND (one of the 17
 * codes); naming the right method turns a dead end into the next step.
 */
export const methodsAt = (spec: OpenApi.OpenAPISpec) => {
  const routes = Object.entries(spec.paths).map(([path, item]) => ({
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}/]+\}/g, "[^/]+")}/?$`),
    methods: Object.keys(item as object)
      .filter((key) => ["get", "post", "put", "patch", "delete"].includes(key))
      .map((key) => key.toUpperCase())
  }))
  return (path: string): ReadonlyArray<string> =>
    routes.filter((route) => route.pattern.test(path)).flatMap((route) => route.methods)
}
