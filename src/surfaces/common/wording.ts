/**
 * The services word their messages for the REST API ("List the keys with GET /v1/keys."). A person
 * on another surface cannot send a REST request from where they are: an MCP agent has tools, a
 * person in a browser has pages. This table says where each route's job is done on the others, and
 * each surface rewrites the messages it shows with it, once, where it renders them.
 */
interface Elsewhere {
  /** The REST route as messages write it. */
  readonly route: string
  /** The MCP tool that does the same, or what to do instead when none does. */
  readonly mcp: string
  /** The page that does the same. */
  readonly page: string
}

const elsewhere = (baseUrl: string): ReadonlyArray<Elsewhere> => [
  {
    route: "POST /v1/keys/update",
    mcp: "the update_key tool",
    page: "the dashboard's Keys page (Edit limits)"
  },
  { route: "POST /v1/keys/revoke", mcp: "the revoke_key tool", page: "the dashboard's Keys page" },
  { route: "POST /v1/keys/rotate", mcp: "the rotate_key tool", page: "the dashboard's Keys page" },
  { route: "GET /v1/keys", mcp: "the list_keys tool", page: "the dashboard's Keys page" },
  { route: "POST /v1/keys/mint", mcp: `${baseUrl}/docs (mint a key)`, page: `${baseUrl}/docs` },
  { route: "POST /v1/alert", mcp: "the set_balance_alert tool", page: "the dashboard's Billing page" },
  { route: "POST /v1/portal", mcp: "the billing_portal tool", page: "the dashboard's Billing page" },
  { route: "GET /v1/usage", mcp: "the get_usage tool", page: "the dashboard's Overview" },
  {
    route: "POST /v1/apps/revoke",
    mcp: `${baseUrl}/dashboard/apps`,
    page: "the dashboard's Connected apps page"
  },
  { route: "GET /v1/apps", mcp: `${baseUrl}/dashboard/apps`, page: "the dashboard's Connected apps page" },
  { route: "GET /v1/audit", mcp: "the list_audit_events tool", page: "the dashboard's Activity page" },
  { route: "GET /v1/auth/tokens", mcp: `${baseUrl}/dashboard/tokens`, page: "the dashboard's Sign-ins page" },
  {
    route: "POST /v1/auth/email/start",
    mcp: `${baseUrl}/login in a browser`,
    page: `the sign-in page (${baseUrl}/login)`
  },
  { route: "POST /v1/recover", mcp: `${baseUrl}/recover in a browser`, page: `${baseUrl}/recover` },
  { route: "POST /v1/checkout", mcp: `${baseUrl}/upgrade`, page: `${baseUrl}/upgrade` }
]

/** A data route named beside its operation: "resolveForumUrl (GET /v1/forum/resolve-url)". */
const dataRouteAside = / \((?:GET|POST) \/v1\/(?:profnet|forum|microblog)\/[^)]*\)/g

const rewrite = (message: string, baseUrl: string, side: "mcp" | "page") => {
  if (!message.includes("/v1/")) return message
  let out = message.replace(dataRouteAside, "")
  for (const entry of elsewhere(baseUrl)) out = out.replaceAll(entry.route, entry[side])
  return out
}

/** A message as an MCP agent reads it: tools (and pages where no tool does it) instead of REST routes. */
export const forMcp = (message: string, baseUrl: string) => rewrite(message, baseUrl, "mcp")

/** A message as a person on a page reads it: pages instead of REST routes. */
export const forPages = (message: string, baseUrl: string) => rewrite(message, baseUrl, "page")
