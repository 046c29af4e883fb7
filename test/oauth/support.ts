import { execFileSync } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type {
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens
} from "@modelcontextprotocol/client"
import { type Browser, chromium, type Page } from "playwright-core"

/** A free port, so the service's BASE_URL can be its own loopback address (the MCP client wants https or loopback). */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

/** The MCP client's loopback redirect (RFC 8252): it records each callback's query. */
export const callbackListener = async () => {
  const callbacks: Array<URLSearchParams> = []
  const server = createServer((request, response) => {
    callbacks.push(new URL(request.url ?? "/", "http://callback").searchParams)
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    response.end("<!doctype html><title>Connected</title><p>Connected; close this tab.</p>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`
  return { url, callbacks, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** An MCP client's OAuth state kept in memory; `authorizationUrl` is where it would open the browser. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: StoredOAuthClientInformation | undefined
  saved: StoredOAuthTokens | undefined
  verifier = ""
  authorizationUrl: URL | undefined
  readonly redirect: string
  readonly name: string
  constructor(redirect: string, name: string) {
    this.redirect = redirect
    this.name = name
  }
  get redirectUrl() {
    return this.redirect
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    }
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
  discovery: OAuthDiscoveryState | undefined
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }
  discoveryState() {
    return this.discovery
  }
}

const chromiumPath = (() => {
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || undefined
  } catch {
    return undefined
  }
})()
const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false"
export const skipReason =
  chromiumPath === undefined && !inCi
    ? "no `chromium` on PATH (apt-get install -y chromium); CI=true makes this a failure"
    : undefined

/** Debian's Chromium with one page; requests carry `X-Forwarded-For: ip` (loopback is a trusted proxy). */
export const withChromium = async <A>(ip: string, run: (page: Page) => Promise<A>) => {
  if (chromiumPath === undefined) throw new Error("CI is set and `chromium` is not installed")
  const browser: Browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
  })
  try {
    const context = await browser.newContext({ extraHTTPHeaders: { "x-forwarded-for": ip } })
    return await run(await context.newPage())
  } finally {
    await browser.close()
  }
}

/** PKCE S256: a verifier and its challenge. */
export const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

export interface Answer {
  readonly status: number
  readonly location: string | undefined
  readonly text: string
  readonly json: any
}

/**
 * A browser's part without a browser: requests with one cookie jar (the service's cookies are
 * few and named apart, so paths are ignored), redirects not followed, a client address per run.
 */
export const cookieClient = (baseUrl: string, ip: string) => {
  const jar = new Map<string, string>()
  const request = async (
    url: string,
    init: { method?: string; form?: Record<string, string>; json?: unknown } = {}
  ) => {
    const headers: Record<string, string> = { "x-forwarded-for": ip }
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ")
    let body: string | undefined
    if (init.form !== undefined) {
      headers["content-type"] = "application/x-www-form-urlencoded"
      body = new URLSearchParams(init.form).toString()
    } else if (init.json !== undefined) {
      headers["content-type"] = "application/json"
      body = JSON.stringify(init.json)
    }
    const target = url.startsWith("/") ? `${baseUrl}${url}` : url
    const response = await fetch(target, {
      method: init.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      redirect: "manual",
      ...(body === undefined ? {} : { body })
    })
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(";")
      const index = pair!.indexOf("=")
      const name = pair!.slice(0, index)
      const value = pair!.slice(index + 1)
      if (value === "" || /expires=Thu, 01 Jan 1970/i.test(cookie)) jar.delete(name)
      else jar.set(name, value)
    }
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {}
    const location = response.headers.get("location") ?? undefined
    return {
      status: response.status,
      location: location === undefined ? undefined : new URL(location, target).href,
      text,
      json
    } satisfies Answer
  }
  return { request, jar }
}

/** Registers a public client (RFC 7591) with one redirect URI. */
export const registration = (baseUrl: string, redirectUri: string, name: string, ip?: string) =>
  fetch(`${baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(ip === undefined ? {} : { "x-forwarded-for": ip }) },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    })
  })

export const register = async (baseUrl: string, redirectUri: string, name = "Negative Agent") => {
  const response = await fetch(`${baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    })
  })
  const body = (await response.json()) as { client_id: string }
  if (response.status !== 201) throw new Error(`register: ${response.status} ${JSON.stringify(body)}`)
  return body.client_id
}

export const authorizeUrl = (baseUrl: string, params: Record<string, string | undefined>) => {
  const url = new URL(`${baseUrl}/oauth/authorize`)
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value)
  return url.href
}

export const tokenRequest = async (baseUrl: string, fields: Record<string, string>) => {
  const response = await fetch(`${baseUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString()
  })
  return { status: response.status, json: (await response.json()) as any }
}
