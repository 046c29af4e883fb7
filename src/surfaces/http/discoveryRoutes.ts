import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { AppConfig, type AppConfigShape, links } from "../../config.ts"
import { errorCatalog } from "../../contract/errors.ts"
import { mcpMounts, mcpPath, mountUrl } from "../../contract/mcpMounts.ts"
import type { PaymentRailName } from "../../domain/plans.ts"
import { protectedResourcePath } from "../mcp/auth.ts"
import { serverInfoOf } from "../mcp/server.ts"
import { jwksPath } from "./jwksRoute.ts"

/**
 * The revisions every mount serves: the 2026-07-28 one (stateless, negotiated by `server/discover`;
 * the SDK does not export its list of modern revisions) and the 2025 ones the SDK still handshakes.
 */
export const supportedProtocolVersions = ["2026-07-28", ...SUPPORTED_PROTOCOL_VERSIONS]

export const serverCardPath = "/mcp/server-card"
export const aiCatalogPath = "/.well-known/ai-catalog.json"
export const llmsTxtPath = "/llms.txt"

const description =
  "Metered public data for AI agents from a professional network, a forum and a microblog: REST and MCP, priced per call in credits, every answer with a receipt."

/** The server card: what an agent reads to connect, per mount, and how it authenticates. */
export const serverCard = (config: Pick<AppConfigShape, "baseUrl">) => {
  const all = mcpMounts[0]!
  return {
    name: serverInfoOf(all).name,
    version: serverInfoOf(all).version,
    description,
    remotes: mcpMounts.map((mount) => ({
      type: "streamable-http",
      url: mountUrl(config.baseUrl, mount),
      platform: mount.platform ?? "all",
      supportedProtocolVersions
    })),
    authentication: {
      required: true,
      schemes: [
        {
          type: "bearer",
          description: `A spend key (data tools) or a management token (key tools) as \`Authorization: Bearer\`. Mint a free trial key with POST ${config.baseUrl}/v1/keys/mint.`
        },
        {
          type: "oauth2",
          description:
            "Sign in in a browser with an emailed code; the token names the mount as its resource.",
          authorizationServer: config.baseUrl,
          protectedResourceMetadata: mcpMounts.map(
            (mount) => `${config.baseUrl}${protectedResourcePath(mount.path)}`
          )
        }
      ]
    },
    documentation: { llms: `${config.baseUrl}${llmsTxtPath}`, docs: links(config.baseUrl).docs }
  }
}

/** `/.well-known/ai-catalog.json`: the service's agent-facing entries, the MCP server card first. */
export const aiCatalog = (config: Pick<AppConfigShape, "baseUrl">) => ({
  version: "1",
  entries: [
    {
      type: "mcp-server-card",
      name: serverInfoOf(mcpMounts[0]!).name,
      description,
      url: `${config.baseUrl}${serverCardPath}`
    },
    { type: "openapi", name: "svc-data REST", url: links(config.baseUrl).openapi },
    { type: "llms-txt", name: "svc-data for agents", url: `${config.baseUrl}${llmsTxtPath}` }
  ]
})

/** What each rail asks of the payer; a new rail name does not compile until it is described here. */
const railText: Record<PaymentRailName, string> = {
  stripe:
    "the checkout's `url` is a Stripe payment page for a person; credits land on the key when Stripe confirms.",
  local: "the built-in test-mode checkout; open its `url` and confirm (no real money)."
}

/** The payment rails an agent can pay by, in the configured order. */
const railLines = (config: Pick<AppConfigShape, "checkoutRails">) =>
  config.checkoutRails.map((rail) => `- ${rail}: ${railText[rail]}`)

/** `/llms.txt`: what an agent needs, in plain text, from the configuration and the error catalogue. */
export const llmsTxt = (config: Pick<AppConfigShape, "baseUrl" | "checkoutRails" | "x402">) => {
  const base = config.baseUrl
  const errors = Object.entries(errorCatalog).map(
    ([code, entry]) =>
      `- ${code} (HTTP ${entry.status}${entry.retriable ? ", retriable" : ""}): ${entry.next}`
  )
  return [
    `# ${serverInfoOf(mcpMounts[0]!).name}`,
    "",
    `> ${description}`,
    "",
    "## Get a key",
    `POST ${base}/v1/keys/mint (no body, no account): the answer's \`key\` is a free trial spend key, shown once. Send it as \`Authorization: Bearer <key>\`.`,
    `A person upgrades or claims the account at ${links(base).upgrade} and ${links(base).claim}.`,
    "",
    "## Call",
    `- REST: GET ${base}/v1/<platform>/<operation path> with the query parameters; the operations and their prices: ${links(base).openapi}.`,
    `- MCP (Streamable HTTP, stateless): ${mcpMounts.map((mount) => mountUrl(base, mount)).join(", ")}; by bearer key, or by OAuth (metadata at ${base}${protectedResourcePath(mcpPath)}). Server card: ${base}${serverCardPath}.`,
    '- Each tool\'s `_meta["svc/pricing"]` states its price: `base` credits and the `rules` that add to it. `max_credits` caps a call; GET /v1/usage (MCP: get_usage, free) tells the balance.',
    "- Paid keys send an Idempotency-Key (MCP: `idempotency_key`): a retry with the same key is not charged again.",
    "",
    "## Read a receipt",
    `Every answer is an envelope {schema_version, kind, data, freshness, cost, receipt}; \`receipt\` says what was quoted, charged and refunded. GET ${base}/v1/receipts/<id> returns it signed: a compact JWS (EdDSA) over the RFC 8785 JSON of the receipt without \`signature\`; verify it with the keys at ${base}${jwksPath}.`,
    "",
    "## Errors",
    "Errors are application/problem+json with `code`, `message`, `param` (on INVALID_INPUT) and `doc_url`. Nothing is charged on an error. What to do for each code:",
    ...errors,
    "",
    "## Pay",
    `An INSUFFICIENT_CREDITS or upgrade answer carries an offer; POST ${base}/v1/checkout starts a checkout on one of these rails (a person opens its \`url\`):`,
    ...railLines(config),
    ...(Option.isSome(config.x402)
      ? [
          `- x402 (an agent pays by itself, no person): every INSUFFICIENT_CREDITS carries a \`PAYMENT-REQUIRED\` header (x402 v2, network ${config.x402.value.network}); retry the same request with the same Idempotency-Key and a \`PAYMENT-SIGNATURE\` (MCP: \`_meta["x402/payment"]\`), or buy ahead with POST ${base}/v1/credits/x402 {"credits": N}. The answer's \`PAYMENT-RESPONSE\` names the transaction.`
        ]
      : []),
    ""
  ].join("\n")
}

/** `GET /mcp/server-card`, `GET /.well-known/ai-catalog.json` and `GET /llms.txt`: public, cacheable. */
export const DiscoveryRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const headers = { "cache-control": "public, max-age=300", "access-control-allow-origin": "*" }
    yield* router.add(
      "GET",
      serverCardPath,
      Effect.succeed(HttpServerResponse.jsonUnsafe(serverCard(config), { headers }))
    )
    yield* router.add(
      "GET",
      aiCatalogPath,
      Effect.succeed(HttpServerResponse.jsonUnsafe(aiCatalog(config), { headers }))
    )
    yield* router.add(
      "GET",
      llmsTxtPath,
      Effect.succeed(
        HttpServerResponse.text(llmsTxt(config), { contentType: "text/plain; charset=utf-8", headers })
      )
    )
  })
)
