import { Effect } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { AppConfig } from "../../../config.ts"
import type { RateLimited } from "../../../contract/errors.ts"
import type { Governor } from "../../../domain/accounts.ts"
import { managementTokenPattern } from "../../../domain/secrets.ts"
import { Bearers } from "../../../identity/Bearers.ts"
import { ManagementTokens } from "../../../services/ManagementTokens.ts"
import { Recovery } from "../../../services/Recovery.ts"
import { SignIn } from "../../../services/SignIn.ts"
import {
  cookieToken,
  csrfMatches,
  type Form,
  type FormRefusal,
  htmlPage as page,
  readForm
} from "./respond.ts"
import { home, loginPage, problemPage } from "./signIn.ts"

/** A wait in words: "40 seconds", "12 minutes". */
const wait = (seconds: number) =>
  seconds < 90 ? `${Math.max(1, seconds)} seconds` : `${Math.ceil(seconds / 60)} minutes`

export const tooMany = (error: RateLimited) =>
  `Too many attempts from here or for this address. Try again in ${wait(error.retry_after_seconds)}.`
export const rateLimitHeaders = (error: RateLimited) => ({ "retry-after": String(error.retry_after_seconds) })

export const badEmail = "That is not an email address; write it like name@example.com."

/**
 * What the sign-in pages' routes share: the browser's session (its cookie's management token),
 * form reading under the body limit, and the check of cookie-authenticated forms (CSRF).
 */
export const pageSession = Effect.gen(function* () {
  const config = yield* AppConfig
  const signIn = yield* SignIn
  const managementTokens = yield* ManagementTokens
  const recovery = yield* Recovery
  const bearers = yield* Bearers
  const personal = { private: true } as const

  const clientIp = Effect.map(HttpServerRequest.HttpServerRequest, bearers.clientIp)

  /** The browser's sign-in, when its cookie holds a live management token. */
  const session = Effect.gen(function* () {
    const token = yield* cookieToken
    if (token === undefined || !managementTokenPattern.test(token)) return undefined
    const governor = yield* managementTokens.authenticate(token).pipe(
      Effect.catchTag("Unauthorized", () => Effect.succeed(undefined)),
      Effect.orDie
    )
    return governor === undefined ? undefined : { token, governor }
  })

  const refusals: Record<FormRefusal, { title: string; message: string; status: number }> = {
    "too-large": {
      title: "Form too large",
      message: `The form is larger than ${config.maxBodyBytes} bytes.`,
      status: 413
    },
    "not-a-form": {
      title: "Not a form",
      message: "This address takes an HTML form (application/x-www-form-urlencoded).",
      status: 415
    },
    "cross-site": {
      title: "Form refused",
      message: "This form was sent from another site. Open the page on this service and submit it there.",
      status: 403
    }
  }
  const refusedForm = (refusal: FormRefusal) =>
    page(problemPage(config, refusals[refusal].title, refusals[refusal].message), {
      status: refusals[refusal].status
    })

  /** Reads the form, then runs `handle` with it; an oversized or foreign body never reaches it. */
  const withForm = <E, R>(
    handle: (form: Form) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
    Effect.flatMap(readForm(config), (form) =>
      typeof form === "string" ? Effect.succeed(refusedForm(form)) : handle(form)
    )

  /** A form the cookie authenticates: signed in, and its CSRF field matches the session. */
  const withSignedInForm = <E, R>(
    handle: (
      form: Form,
      current: { readonly token: string; readonly governor: Governor }
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
    withForm((form) =>
      Effect.gen(function* () {
        const current = yield* session
        if (current === undefined)
          return page(
            loginPage(config, {
              continuation: home,
              error: "You are not signed in here (or your sign-in ended). Sign in, then try again."
            }),
            { status: 401, ...personal }
          )
        if (!csrfMatches(current.token, form.get("csrf")))
          return page(
            problemPage(
              config,
              "Form refused",
              "This form does not belong to your current sign-in (it was opened before a new sign-in, or on another site). Open the page again and resubmit."
            ),
            { status: 403, ...personal }
          )
        return yield* handle(form, current)
      })
    )

  return {
    config,
    signIn,
    managementTokens,
    recovery,
    bearers,
    personal,
    clientIp,
    session,
    withForm,
    withSignedInForm
  }
})
