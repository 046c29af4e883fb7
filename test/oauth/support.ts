import { execFileSync } from "node:child_process"
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
