import { createServer } from "node:http"
import { Console, Effect } from "effect"
import { openBrowser } from "./browser.ts"
import { readConfig, updateConfig } from "./config.ts"
import { bold, dim } from "./output.ts"
import { Abandoned, type Session, session } from "./session.ts"

interface SignedIn {
  readonly management_token: string
  readonly token_id: string
  readonly email: string
  readonly accounts: ReadonlyArray<{ readonly account_id: string; readonly plan: string }>
}

/**
 * Keeps the sign-in beside the CLI's key. The CLI's account stays its key's (what `usage` reads);
 * without a key it is the sign-in's account when there is one. A key of an account this email does
 * not govern is said so at once, with the way to claim it or to switch.
 */
const remember = (signedIn: SignedIn, baseUrl: string) =>
  Effect.gen(function* () {
    const governed = signedIn.accounts.map((account) => account.account_id)
    const only = governed.length === 1 ? governed[0] : undefined
    const before = yield* readConfig
    yield* updateConfig((c) => ({
      ...c,
      base_url: baseUrl,
      management_token: signedIn.management_token,
      token_id: signedIn.token_id,
      email: signedIn.email,
      accounts: governed,
      ...(c.account_id === undefined && only !== undefined ? { account_id: only } : {})
    }))
    yield* Console.log(`Signed in as ${signedIn.email}.`)
    const mine = before.account_id
    if (before.key !== undefined && mine !== undefined && !governed.includes(mine))
      yield* Console.error(
        [
          `This CLI's key is of ${mine}, which ${signedIn.email} does not govern: \`usage\` and data calls use ${mine}, and \`keys\`, \`alert\` and \`portal\` need it claimed.`,
          `Claim it: ${baseUrl}/claim?account=${mine}`,
          governed.length > 0
            ? `Or switch to ${governed.join(" or ")}: svc keys create --use --account ${governed[0]}`
            : ""
        ]
          .filter((line) => line !== "")
          .join("\n")
      )
  })

type Pending = { readonly error: string; readonly interval?: number }
const isPending = (error: unknown): error is Pending =>
  typeof error === "object" && error !== null && "error" in error && typeof error.error === "string"

/** RFC 8628: show the code, then poll every `interval` seconds (5 more after each `slow_down`). */
const deviceFlow = (s: Session) =>
  Effect.gen(function* () {
    const started = yield* s.client.startDeviceSignIn()
    const err = process.stderr
    yield* Console.error(
      [
        `To sign in, open ${bold(started.verification_uri, err)} and enter ${bold(started.user_code, err)}`,
        `or open ${started.verification_uri_complete}`,
        dim("Waiting for the approval...", err)
      ].join("\n")
    )
    let interval = started.interval
    const deadline = Date.now() + started.expires_in * 1000
    while (Date.now() < deadline) {
      yield* Effect.sleep(interval * 1000)
      const outcome = yield* s.client
        .pollDeviceSignIn({ payload: { device_code: started.device_code } })
        .pipe(
          Effect.map((signedIn) => ({ signedIn }) as const),
          Effect.catch((error) =>
            isPending(error) ? Effect.succeed({ pending: error } as const) : Effect.fail(error)
          )
        )
      if ("signedIn" in outcome) return outcome.signedIn
      const { pending } = outcome
      if (pending.error === "slow_down") interval = pending.interval ?? interval + 5
      else if (pending.error !== "authorization_pending")
        return yield* new Abandoned({ message: `Sign-in not completed: ${pending.error}.`, auth: true })
    }
    return yield* new Abandoned({ message: "The sign-in code expired; run `svc login` again.", auth: true })
  })

/** RFC 8252: a one-shot listener on 127.0.0.1 receives `code` and `state` from /login's redirect. */
const browserFlow = (s: Session) =>
  Effect.gen(function* () {
    const state = crypto.randomUUID()
    const received = yield* Effect.callback<{ readonly code: string; readonly url: string } | undefined>(
      (resume) => {
        let settled = false
        const server = createServer((request, response) => {
          const url = new URL(request.url ?? "/", "http://127.0.0.1")
          const code = url.searchParams.get("code")
          if (url.pathname !== "/cb" || url.searchParams.get("state") !== state || code === null) {
            response.writeHead(400, { "content-type": "text/plain" }).end("Not a sign-in callback.")
            return
          }
          response.writeHead(200, { "content-type": "text/plain" }).end("Signed in; you can close this tab.")
          settled = true
          server.close()
          resume(Effect.succeed({ code, url: "" }))
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          const port = typeof address === "object" && address !== null ? address.port : 0
          const login = `${s.baseUrl}/login?redirect_uri=${encodeURIComponent(`http://127.0.0.1:${port}/cb`)}&state=${state}`
          Effect.runFork(
            Effect.gen(function* () {
              if (!(yield* openBrowser(login))) {
                settled = true
                server.close()
                resume(Effect.succeed(undefined))
                return
              }
              yield* Console.error(`Opened ${login} in your browser; waiting for the sign-in...`)
            })
          )
        })
        return Effect.sync(() => {
          if (!settled) server.close()
        })
      }
    )
    if (received === undefined) return undefined
    return yield* s.client.exchangeCode({ payload: { code: received.code } })
  })

export const login = (device: boolean) =>
  Effect.gen(function* () {
    const s = yield* session
    const byBrowser = device ? undefined : yield* browserFlow(s)
    const signedIn = byBrowser ?? (yield* deviceFlow(s))
    yield* remember(signedIn, s.baseUrl)
  })
