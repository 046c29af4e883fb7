import { execFileSync } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { codeIn, latestMail, linkTokenIn } from "../identity/support.ts"

/**
 * Debian's Chromium driven by playwright-core, for the pages a person uses with a browser. Without
 * Chromium the tests skip locally and fail in CI.
 */
export const chromiumPath = (() => {
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

export const baseUrl = "http://svc.test"

export interface BrowserRun {
  readonly page: Page
  readonly context: BrowserContext
  /** A command-line client's loopback callback (`http://127.0.0.1:PORT`), a real listener. */
  readonly loopback: string
  /** Every request that reached the loopback callback (but the browser's own request for its icon). */
  readonly callbacks: ReadonlyArray<string>
  /** Requests to any host but the service and the loopback callback: refused and listed. */
  readonly elsewhere: ReadonlyArray<string>
  /** The status of every answer from the service, by method and path, in order (redirects too). */
  readonly statuses: ReadonlyArray<{
    readonly method: string
    readonly path: string
    readonly status: number
  }>
}

/** A listener standing in for a command-line client's loopback redirect (RFC 8252). */
const callbackListener = async () => {
  const callbacks: Array<string> = []
  const server = createServer((request, response) => {
    // The browser asks the callback's origin for its icon on its own, after the page: not a callback.
    if (request.url === "/favicon.ico") {
      response.writeHead(404).end()
      return
    }
    callbacks.push(`${origin}${request.url ?? "/"}`)
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    response.end("<!doctype html><title>Done</title><p>Signed in; close this tab.</p>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { origin, callbacks, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/**
 * A browser in which the base URL's host resolves to the test server, so redirects and cookies are
 * the browser's own. Requests carry `X-Forwarded-For: ip` (the test server trusts loopback as a
 * proxy), so each test has its own client address and rate limits.
 */
export const withBrowser = <A>(
  serverUrl: string,
  options: { readonly ip: string; readonly viewport?: { readonly width: number; readonly height: number } },
  run: (browser: BrowserRun) => Promise<A>
) =>
  Effect.promise(async () => {
    if (chromiumPath === undefined) throw new Error("CI is set and `chromium` is not installed")
    const server = new URL(serverUrl)
    const listener = await callbackListener()
    const browser: Browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        `--host-resolver-rules=MAP ${new URL(baseUrl).host}:80 ${server.host}`
      ]
    })
    try {
      const context = await browser.newContext({
        extraHTTPHeaders: { "x-forwarded-for": options.ip },
        ...(options.viewport === undefined ? {} : { viewport: options.viewport })
      })
      const elsewhere: Array<string> = []
      const statuses: Array<{ method: string; path: string; status: number }> = []
      await context.route("**/*", (route) => {
        const url = route.request().url()
        if (url.startsWith(`${baseUrl}/`) || url.startsWith(`${listener.origin}/`)) return route.continue()
        elsewhere.push(url)
        return route.abort()
      })
      context.on("response", (response) => {
        const url = response.url()
        if (url.startsWith(`${baseUrl}/`))
          statuses.push({
            method: response.request().method(),
            path: new URL(url).pathname,
            status: response.status()
          })
      })
      const page = await context.newPage()
      return await run({
        page,
        context,
        loopback: listener.origin,
        callbacks: listener.callbacks,
        elsewhere,
        statuses
      })
    } finally {
      await browser.close()
      await listener.close()
    }
  })

/** Reads the outbox from plain promises (the browser's side of a test). */
export const mailReader = Effect.map(SqlClient.SqlClient, (sql) => {
  const read = (email: string) =>
    Effect.runPromise(latestMail(email).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
  return {
    read,
    code: async (email: string) => codeIn((await read(email)).text),
    link: async (email: string, path: string) => linkTokenIn((await read(email)).text, path)
  }
})
export type MailReader = Effect.Success<typeof mailReader>

/** The page's visible text, as a person reads it. */
// biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as a person reads it
export const textOf = (page: Page) => page.locator("body").innerText()

/** The last answer the service gave to `method path`. */
export const lastStatus = (run: BrowserRun, method: string, path: string) =>
  [...run.statuses].reverse().find((entry) => entry.method === method && entry.path === path)?.status

/** Sign in at `/login` (or wherever the email form is) with the emailed code. */
export const signInWithCode = async (page: Page, mail: MailReader, email: string) => {
  await page.getByLabel("Email address").fill(email)
  await page.getByRole("button", { name: "Send me a code" }).click()
  assert.include(await textOf(page), "We sent a 6-digit code")
  await page.getByLabel("6-digit code").fill(await mail.code(email.toLowerCase()))
  await page.getByRole("button", { name: "Sign in" }).click()
}

/** The session cookie as the browser stores it. */
export const sessionCookieOf = async (context: BrowserContext) =>
  (await context.cookies(baseUrl)).find((cookie) => cookie.name === "svc_session")
