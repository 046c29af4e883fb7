import { createServer } from "node:http"
import { Console, Effect } from "effect"
import { openBrowser } from "./browser.ts"
import { updateConfig } from "./config.ts"
import { bold, dim } from "./output.ts"
import { Abandoned, type Session, session } from "./session.ts"

interface SignedIn {
  readonly management_token: string
  readonly token_id: string
  readonly email: string
  readonly accounts: ReadonlyArray<{ readonly account_id: string; readonly plan: string }>
}

const remember = (signedIn: SignedIn, baseUrl: string) =>
  Effect.gen(function* () {
    const only = signedIn.accounts.length === 1 ? signedIn.accounts[0]!.account_id : undefined
    yield* updateConfig((c) => ({
      ...c,
      base_url: baseUrl,
      management_token: signedIn.management_token,
      token_id: signedIn.token_id,
      email: signedIn.email,
      ...(c.account_id === undefined && only !== undefined ? { account_id: only } : {})
    }))
    yield* Console.log(`Signed in as ${signedIn.email}.`)
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
