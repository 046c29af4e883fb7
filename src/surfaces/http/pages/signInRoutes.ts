import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { Account } from "../../../domain/accounts.ts"
import { spendKeyPattern, unrecognizedBearer } from "../../../domain/secrets.ts"
import { isLoopbackRedirect, signInCodePattern } from "../../../domain/signIn.ts"
import type { SignedIn } from "../../../services/SignIn.ts"
import { activatePage } from "./deviceAndRecovery.ts"
import { csrfToken, htmlPage as page, queryParams, withoutSession, withSession } from "./respond.ts"
import { badEmail, pageSession, rateLimitHeaders, tooMany } from "./session.ts"
import {
  type AccountLine,
  authorizePage,
  type CodeStep,
  type Continuation,
  claimPage,
  codePage,
  home,
  linkConfirmPage,
  loginPage,
  refusedRedirectPage,
  signedInPage,
  signedOutPage
} from "./signIn.ts"

const lines = (accounts: ReadonlyArray<Account>): ReadonlyArray<AccountLine> =>
  accounts.map((account) => ({
    id: account.id,
    plan: account.plan,
    balance: account.balanceCredits,
    grant: account.grantCredits
  }))

const fromSignIn = (signedIn: SignedIn): ReadonlyArray<AccountLine> =>
  signedIn.accounts.map((account) => ({
    id: account.account_id,
    plan: account.plan,
    balance: account.balance_credits,
    grant: account.grant_credits
  }))

const deadLink =
  "This sign-in link is wrong, used or expired (it works once, for 10 minutes). Enter your email for a new code."

/** Where a sign-in continues: from the query (GET) or the hidden fields (POST). */
const continuationOf = (get: (name: string) => string): Continuation | "refused" => {
  const redirectUri = get("redirect_uri")
  if (redirectUri !== "") {
    return isLoopbackRedirect(redirectUri) && redirectUri.length <= 2000
      ? { _tag: "Redirect", redirectUri, state: get("state").slice(0, 500) }
      : "refused"
  }
  if (get("then") === "activate") return { _tag: "Activate", userCode: get("user_code").slice(0, 20) }
  if (get("then") === "dashboard") return { _tag: "Dashboard" }
  return home
}

/**
 * A page whose form may end in the loopback redirect names that origin in its CSP. CSP cannot name
 * an IPv6 literal (Chromium ignores `http://[::1]:PORT` and then blocks the redirect), so `[::1]`
 * is allowed as `http://*:PORT`: that port on any host, where only our own redirect leads.
 */
const formTargets = (continuation: Continuation): ReadonlyArray<string> => {
  if (continuation._tag !== "Redirect") return []
  const url = new URL(continuation.redirectUri)
  return [url.hostname === "[::1]" ? `http://*${url.port === "" ? "" : `:${url.port}`}` : url.origin]
}

const callback = (redirectUri: string, code: string, state: string) => {
  const url = new URL(redirectUri)
  url.searchParams.set("code", code)
  url.searchParams.set("state", state)
  return url.toString()
}

/**
 * `/login` (email code, emailed link, loopback redirect), sign-out and `/claim`. A sign-in leaves
 * the management token in an HttpOnly, SameSite=Lax cookie.
 */
export const SignInPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const {
      config,
      signIn,
      managementTokens,
      bearers,
      personal,
      clientIp,
      session,
      withForm,
      withSignedInForm
    } = yield* pageSession
    const badCode = `That code is wrong, used or expired. A code works for 10 minutes and stops taking tries from here after ${config.policy.signIn.wrongTriesPerCodeIp} wrong ones; start again for a new one, or use the link in the email.`

    const afterSignIn = (signedIn: SignedIn, continuation: Continuation, claiming: string | undefined) =>
      Effect.gen(function* () {
        const token = signedIn.management_token
        // The cookie's previous sign-in, if any, is replaced: its token is revoked, not orphaned.
        const previous = yield* session
        if (previous !== undefined)
          yield* managementTokens.revoke(previous.governor, previous.governor.tokenId).pipe(
            Effect.catchTag("NotFound", () => Effect.void),
            Effect.orDie
          )
        if (continuation._tag === "Dashboard")
          return withSession(
            HttpServerResponse.redirect(`${config.baseUrl}/dashboard`, {
              status: 303,
              headers: { "cache-control": "no-store" }
            }),
            token,
            config.baseUrl
          )
        if (continuation._tag === "Redirect") {
          const governor = yield* managementTokens.authenticate(token).pipe(Effect.orDie)
          const code = yield* signIn.exchangeCode(governor).pipe(Effect.orDie)
          return withSession(
            HttpServerResponse.redirect(callback(continuation.redirectUri, code, continuation.state), {
              status: 303,
              headers: { "cache-control": "no-store" }
            }),
            token,
            config.baseUrl
          )
        }
        const body =
          continuation._tag === "Activate"
            ? activatePage(config, {
                email: signedIn.email,
                userCode: continuation.userCode,
                csrf: csrfToken(token)
              })
            : signedInPage(config, {
                email: signedIn.email,
                accounts: fromSignIn(signedIn),
                csrf: csrfToken(token),
                claiming,
                claimed: signedIn.claimed,
                grant: signedIn.grant_credits
              })
        return withSession(page(body, personal), token, config.baseUrl)
      })

    /**
     * The key a form carries (the claim's, from `/claim` through its code step, or pasted on the
     * link's page): its id when it is an active spend key and not a child key (never a claimant),
     * else none, and then nothing is claimed.
     */
    const heldKey = (key: string) =>
      spendKeyPattern.test(key)
        ? bearers.authenticate(key).pipe(
            Effect.map(({ key, account }) =>
              key.parentKeyId === undefined ? { keyId: key.id, accountId: account.id } : undefined
            ),
            Effect.option,
            Effect.map((held) => Option.getOrUndefined(held))
          )
        : Effect.succeed(undefined)

    /** The email step, shared by `/login` and `/claim`: a code is sent, the code form is next. */
    const sendCode = (
      email: string,
      keyId: string | undefined,
      step: Omit<CodeStep, "email">,
      again: (error: string) => string
    ) =>
      Effect.gen(function* () {
        const ip = yield* clientIp
        return yield* signIn.start({ email, ip, keyId }).pipe(
          Effect.as(
            page(codePage(config, { ...step, email: email.trim().toLowerCase() }), {
              ...personal,
              formTargets: formTargets(step.continuation)
            })
          ),
          Effect.catchTags({
            InvalidInput: () => Effect.succeed(page(again(badEmail), { status: 400, ...personal })),
            RateLimited: (error) =>
              Effect.succeed(
                page(again(tooMany(error)), { status: 429, ...personal, headers: rateLimitHeaders(error) })
              )
          }),
          Effect.orDie
        )
      })

    yield* router.add(
      "GET",
      "/login",
      Effect.gen(function* () {
        const query = yield* queryParams
        const token = query.get("token")?.trim().slice(0, 100)
        if (token !== undefined && token !== "") {
          const target = yield* signIn.linkTarget(token).pipe(Effect.orDie)
          if (target === undefined)
            return page(loginPage(config, { continuation: home, error: deadLink }), {
              status: 401,
              ...personal
            })
          const current = yield* session
          return page(
            linkConfirmPage(config, { token, ...target, current: current?.governor.email }),
            personal
          )
        }
        const continuation = continuationOf((name) => query.get(name)?.trim() ?? "")
        if (continuation === "refused") return page(refusedRedirectPage(config), { status: 400 })
        const current = yield* session
        if (current === undefined)
          return page(loginPage(config, { continuation }), {
            ...personal,
            formTargets: formTargets(continuation)
          })
        const { governor, token: sessionToken } = current
        const csrf = csrfToken(sessionToken)
        if (continuation._tag === "Dashboard")
          return HttpServerResponse.redirect(`${config.baseUrl}/dashboard`, {
            status: 303,
            headers: { "cache-control": "no-store" }
          })
        if (continuation._tag === "Redirect")
          return page(
            authorizePage(config, {
              email: governor.email,
              redirectUri: continuation.redirectUri,
              state: continuation.state,
              csrf
            }),
            { ...personal, formTargets: formTargets(continuation) }
          )
        if (continuation._tag === "Activate")
          return page(
            activatePage(config, { email: governor.email, userCode: continuation.userCode, csrf }),
            personal
          )
        return page(
          signedInPage(config, { email: governor.email, accounts: lines(governor.accounts), csrf }),
          personal
        )
      })
    )

    yield* router.add(
      "POST",
      "/login",
      withForm((form) => {
        const continuation = continuationOf(form.get)
        if (continuation === "refused")
          return Effect.succeed(page(refusedRedirectPage(config), { status: 400 }))
        const email = form.get("email")
        return sendCode(email, undefined, { continuation }, (error) =>
          loginPage(config, { continuation, email, error })
        )
      })
    )

    yield* router.add(
      "POST",
      "/login/code",
      withForm((form) =>
        Effect.gen(function* () {
          const continuation = continuationOf(form.get)
          if (continuation === "refused") return page(refusedRedirectPage(config), { status: 400 })
          const claiming = form.get("claiming") === "" ? undefined : form.get("claiming").slice(0, 100)
          const key = form.get("key") === "" ? undefined : form.get("key").slice(0, 200)
          const step: CodeStep = { email: form.get("email"), continuation, claiming, key }
          const options = { ...personal, formTargets: formTargets(continuation) }
          const code = form.get("code").replace(/\s/g, "")
          if (!signInCodePattern.test(code))
            return page(codePage(config, { ...step, error: "The code is the 6 digits in the email." }), {
              ...options,
              status: 400
            })
          const keyId = (yield* heldKey(key ?? ""))?.keyId
          const ip = yield* clientIp
          return yield* signIn.verifyCode({ email: step.email, code, ip, keyId, label: "web" }).pipe(
            Effect.flatMap((signedIn) => afterSignIn(signedIn, continuation, claiming)),
            Effect.catchTags({
              InvalidInput: () =>
                Effect.succeed(
                  page(loginPage(config, { continuation, error: badEmail }), { ...options, status: 400 })
                ),
              Unauthorized: () =>
                Effect.succeed(
                  page(codePage(config, { ...step, error: badCode }), { ...options, status: 401 })
                ),
              RateLimited: (error) =>
                Effect.succeed(
                  page(codePage(config, { ...step, error: tooMany(error) }), {
                    ...options,
                    status: 429,
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
      "/login/link",
      withForm((form) =>
        Effect.gen(function* () {
          // A pasted key claims its account; the signed-in page then says whether it was claimed.
          const held = yield* heldKey(form.get("key").slice(0, 200))
          return yield* signIn
            .verifyLink({ token: form.get("token"), keyId: held?.keyId, label: "web" })
            .pipe(
              Effect.flatMap((signedIn) => afterSignIn(signedIn, home, held?.accountId)),
              Effect.catchTag("Unauthorized", () =>
                Effect.succeed(
                  page(loginPage(config, { continuation: home, error: deadLink }), {
                    status: 401,
                    ...personal
                  })
                )
              ),
              Effect.orDie
            )
        })
      )
    )

    yield* router.add(
      "POST",
      "/login/authorize",
      withSignedInForm((form, { governor }) =>
        Effect.gen(function* () {
          const continuation = continuationOf(form.get)
          if (continuation === "refused" || continuation._tag !== "Redirect")
            return page(refusedRedirectPage(config), { status: 400 })
          const code = yield* signIn.exchangeCode(governor).pipe(Effect.orDie)
          return HttpServerResponse.redirect(callback(continuation.redirectUri, code, continuation.state), {
            status: 303,
            headers: { "cache-control": "no-store" }
          })
        })
      )
    )

    yield* router.add(
      "POST",
      "/logout",
      withSignedInForm((_form, { governor }) =>
        managementTokens.revoke(governor, governor.tokenId).pipe(
          Effect.catchTag("NotFound", () => Effect.void),
          Effect.orDie,
          Effect.as(withoutSession(page(signedOutPage(config), personal), config.baseUrl))
        )
      )
    )

    yield* router.add(
      "GET",
      "/claim",
      Effect.map(queryParams, (query) => {
        const account = query.get("account")?.trim().slice(0, 100)
        return page(claimPage(config, { account: account === "" ? undefined : account }))
      })
    )

    yield* router.add(
      "POST",
      "/claim",
      withForm((form) =>
        Effect.gen(function* () {
          const email = form.get("email")
          const again = (error: string) => claimPage(config, { email, error })
          const key = form.get("key")
          if (!spendKeyPattern.test(key)) return page(again(unrecognizedBearer), { status: 400, ...personal })
          const principal = yield* bearers.authenticate(key).pipe(Effect.option)
          if (principal._tag === "None")
            return page(
              again(
                "This key is not active (unknown, revoked, or its account is suspended), so it has no account to claim."
              ),
              { status: 401, ...personal }
            )
          const { key: record, account } = principal.value
          if (record.parentKeyId !== undefined)
            return page(
              again(
                "This is a child key: it never claims an account. Claim with the account's own key (the one its child keys were made with, or the first key of the account)."
              ),
              { status: 403, ...personal }
            )
          return yield* sendCode(email, record.id, { continuation: home, claiming: account.id, key }, again)
        })
      )
    )
  })
)
