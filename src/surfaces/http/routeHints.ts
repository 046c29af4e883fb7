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

/** At most this many distinct paths keep their label in memory; others are labelled afresh. */
const labelsKept = 4096

/**
 * The route a request's path is counted under in the metrics: an exact static path (a data
 * operation's, `/healthz`), else the OpenAPI template it matches (`/v1/keys/{id}`), else `/mcp` for
 * the MCP mounts, else `other`, so that no client can make a series per path it invents.
 */
export const routeLabeller = (staticPaths: ReadonlyArray<string>, spec: () => OpenApi.OpenAPISpec) => {
  const labels = new Map<string, string>(staticPaths.map((path) => [path, path]))
  let templates: ReadonlyArray<readonly [RegExp, string]> | undefined
  const resolve = (path: string): string => {
    templates ??= Object.keys(spec().paths).map(
      (template) =>
        [
          new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}/]+\}/g, "[^/]+")}/?$`),
          template
        ] as const
    )
    for (const [pattern, template] of templates) if (pattern.test(path)) return template
    if (path === "/mcp" || path.startsWith("/mcp/")) return "/mcp"
    return "other"
  }
  // hot path
  return (url: string): string => {
    const at = url.indexOf("?")
    const path = at === -1 ? url : url.slice(0, at)
    const known = labels.get(path)
    if (known !== undefined) return known
    const label = resolve(path)
    if (label !== "other" && labels.size < labelsKept) labels.set(path, label)
    return label
  }
}
