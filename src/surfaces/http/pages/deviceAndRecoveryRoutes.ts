import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import {
  activatedPage,
  activatePage,
  newKeyPage,
  recoverPage,
  rekeyConfirmPage
} from "./deviceAndRecovery.ts"
import { csrfToken, htmlPage as page, queryParams } from "./respond.ts"
import { badEmail, pageSession, rateLimitHeaders, tooMany } from "./session.ts"
import { loginPage } from "./signIn.ts"

/** `/activate` (a signed-in person approves a device code) and `/recover` (a new key by email link). */
export const DeviceAndRecoveryPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const { config, signIn, recovery, personal, clientIp, session, withForm, withSignedInForm } =
      yield* pageSession

    yield* router.add(
      "GET",
      "/activate",
      Effect.gen(function* () {
        const userCode = ((yield* queryParams).get("user_code") ?? "").trim().slice(0, 20)
        const current = yield* session
        if (current === undefined)
          return page(loginPage(config, { continuation: { _tag: "Activate", userCode } }), personal)
        return page(
          activatePage(config, { email: current.governor.email, userCode, csrf: csrfToken(current.token) }),
          personal
        )
      })
    )

    yield* router.add(
      "POST",
      "/activate",
      withSignedInForm((form, { governor, token }) => {
        const userCode = form.get("user_code").slice(0, 20)
        const again = (error: string, status: number) =>
          Effect.succeed(
            page(activatePage(config, { email: governor.email, userCode, csrf: csrfToken(token), error }), {
              status,
              ...personal
            })
          )
        const decision = form.get("decision")
        if (decision !== "approve" && decision !== "deny") return again("Choose Approve or Deny.", 400)
        return signIn.decideDevice(governor, userCode, decision === "approve").pipe(
          Effect.map((decided) => page(activatedPage(config, decided.user_code, decided.approved), personal)),
          Effect.catchTag("InvalidInput", () =>
            again(
              "No pending sign-in has this code. Check the 8 letters (like BCDF-GHJK); a code works for 10 minutes, once.",
              400
            )
          ),
          Effect.orDie
        )
      })
    )

    const deadRecoveryLink =
      "This recovery link is wrong, used or expired (it works once, for one hour). Ask for a new one below."

    yield* router.add(
      "GET",
      "/recover",
      Effect.gen(function* () {
        const token = ((yield* queryParams).get("token") ?? "").trim().slice(0, 100)
        if (token === "") return page(recoverPage(config, {}), personal)
        const accountId = yield* recovery.target(token).pipe(Effect.orDie)
        return accountId === undefined
          ? page(recoverPage(config, { error: deadRecoveryLink }), { status: 401, ...personal })
          : page(rekeyConfirmPage(config, token, accountId), personal)
      })
    )

    yield* router.add(
      "POST",
      "/recover",
      withForm((form) =>
        Effect.gen(function* () {
          const email = form.get("email")
          const ip = yield* clientIp
          return yield* recovery.start({ email, ip }).pipe(
            Effect.as(page(recoverPage(config, { sent: true }), personal)),
            Effect.catchTags({
              InvalidInput: () =>
                Effect.succeed(
                  page(recoverPage(config, { email, error: badEmail }), { status: 400, ...personal })
                ),
              RateLimited: (error) =>
                Effect.succeed(
                  page(recoverPage(config, { email, error: tooMany(error) }), {
                    status: 429,
                    ...personal,
                    headers: rateLimitHeaders(error)
                  })
                )
            }),
            Effect.orDie
          )
        })
      )
    )

    yield* router.add(
      "POST",
      "/recover/rekey",
      withForm((form) =>
        recovery.rekey(form.get("token")).pipe(
          Effect.map((issued) => page(newKeyPage(config, issued), personal)),
          Effect.catchTag("Unauthorized", () =>
            Effect.succeed(
              page(recoverPage(config, { error: deadRecoveryLink }), { status: 401, ...personal })
            )
          ),
          Effect.orDie
        )
      )
    )
  })
)
