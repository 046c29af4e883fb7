import { Effect } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Account, Governor } from "../../../domain/accounts.ts"
import { selectAccount } from "../../../identity/Bearers.ts"
import { asActor } from "../../../services/Audit.ts"
import { head, html, productName } from "../pages/html.ts"
import { csrfToken, type Form, htmlPage, queryParams } from "../pages/respond.ts"
import { pageSession } from "../pages/session.ts"
import { dashboardCsp, type Frame, failurePage } from "./layout.ts"

type Response = HttpServerResponse.HttpServerResponse
type Request = HttpServerRequest.HttpServerRequest

/** A page outside the dashboard's frame (no account to show): one heading, one next step. */
const barePage = (title: string, body: ReturnType<typeof html>) =>
  html`<!doctype html><html lang="en"><head>${head(`${title} · ${productName}`)}</head><body><main class="narrow"><h1>${title}</h1>${body}</main></body></html>`
    .value

/**
 * What every dashboard route shares: the `/login` cookie's sign-in (none: to `/login`), the account
 * it acts on (`?account=` or a form's `account`, only one the sign-in governs), the CSRF check of
 * every form, the pages' headers, and a page that says what to do when something breaks.
 */
export const dashboardGuard = (formTargets: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { config, session, withSignedInForm } = yield* pageSession

    const respond = (body: string, status = 200) =>
      htmlPage(body, {
        status,
        private: true,
        headers: { "content-security-policy": dashboardCsp(formTargets) }
      })

    const frameOf = (governor: Governor, token: string, account: Account): Frame => ({
      baseUrl: config.baseUrl,
      email: governor.email,
      csrf: csrfToken(token),
      accounts: governor.accounts,
      account,
      testMode: config.checkoutRails.includes("local")
    })

    const noAccount = () =>
      respond(
        barePage(
          "No account",
          html`<p>This sign-in governs no account. <a href="${config.baseUrl}/claim">Claim a trial key</a> or
<a href="${config.baseUrl}/upgrade">buy a pack</a>.</p>`
        )
      )

    const notGoverned = (governor: Governor, token: string, wanted: string) => {
      const first = governor.accounts[0]
      return first === undefined
        ? noAccount()
        : respond(
            failurePage(
              frameOf(governor, token, first),
              "Not your account",
              `This sign-in (${governor.email}) does not govern ${wanted.slice(0, 100)}.`,
              html`Choose one of your accounts with the switcher above, or sign in with the email that owns it.`
            ),
            403
          )
    }

    /** A failure nobody can fix from the page (the database, a bug): logged, and a page that says what to do. */
    const troubled = <R>(effect: Effect.Effect<Response, never, R>) =>
      Effect.catchDefect(effect, (defect) =>
        Effect.logError("dashboard request failed", defect).pipe(
          Effect.as(
            respond(
              barePage(
                "Something went wrong",
                html`<p>The dashboard could not answer just now. Reload in a minute; if you were changing something,
check its page first to see whether the change took effect. Or <a href="${config.baseUrl}/dashboard">go back to the overview</a>.</p>`
              ),
              500
            )
          )
        )
      )

    /** A dashboard page: signed in (else to `/login`), for the account of `?account=` or the first one. */
    const signedInPage = <R>(
      handle: (
        frame: Frame,
        governor: Governor,
        query: URLSearchParams
      ) => Effect.Effect<Response, unknown, R>
    ): Effect.Effect<Response, never, R | Request> =>
      Effect.gen(function* () {
        const current = yield* session
        if (current === undefined)
          return HttpServerResponse.redirect(`${config.baseUrl}/login?then=dashboard`, {
            status: 303,
            headers: { "cache-control": "no-store" }
          })
        const { governor, token } = current
        if (governor.accounts.length === 0) return noAccount()
        const query = yield* queryParams
        const wanted = query.get("account")?.trim() || undefined
        const chosen = governor.accounts.find(
          (account) => account.id === (wanted ?? governor.accounts[0]!.id)
        )
        if (chosen === undefined) return notGoverned(governor, token, wanted!)
        return yield* handle(frameOf(governor, token, chosen), governor, query)
      }).pipe(Effect.orDie, troubled)

    /** A dashboard form: signed in, CSRF checked, and its `account` one the sign-in governs. */
    const signedInForm = <R>(
      handle: (frame: Frame, governor: Governor, form: Form) => Effect.Effect<Response, unknown, R>
    ): Effect.Effect<Response, never, R | Request> =>
      withSignedInForm((form, { governor, token }) =>
        Effect.gen(function* () {
          const chosen = yield* selectAccount(governor, form.get("account")).pipe(Effect.option)
          if (chosen._tag === "None") return notGoverned(governor, token, form.get("account"))
          return yield* handle(frameOf(governor, token, chosen.value), governor, form).pipe(
            asActor({ kind: "email", id: governor.email })
          )
        })
      ).pipe(Effect.orDie, troubled)

    return { config, respond, signedInPage, signedInForm, barePage }
  })
