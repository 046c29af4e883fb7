import { Effect } from "effect"
import { post, signIn, spend } from "../identity/support.ts"
import { authorizeUrl, cookieClient, pkce, register } from "../oauth/support.ts"
import type { TestApp } from "../support/app.ts"

/**
 * Every page a person sees, each reachable by a plain GET: what the screenshots, the sideways-scroll
 * check and Lighthouse walk through. The service runs with its BASE_URL on its own loopback address
 * (OAuth's consent needs a loopback or https issuer), and the tour makes the state the pages show: a
 * claimed trial account with receipts and keys (one rotated, one capped with a child key), an open checkout, a paid one, a
 * billing-portal session and an OAuth consent waiting for its answer.
 */
export interface TourPage {
  /** The screenshot's file name. */
  readonly name: string
  readonly path: string
  /** The cookies the page needs (`name=value; ...`), empty for public pages. */
  readonly cookie: string
}

export interface Tour {
  readonly pages: ReadonlyArray<TourPage>
  readonly email: string
  readonly accountId: string
}

const form = (baseUrl: string, path: string, fields: Record<string, string>, ip: string) =>
  fetch(`${baseUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: baseUrl,
      "x-forwarded-for": ip
    },
    body: new URLSearchParams(fields).toString()
  })

export const makeTour = (app: TestApp["Service"], baseUrl: string, ip: string) =>
  Effect.gen(function* () {
    const email = "tour@example.com"
    const minted = yield* app.mint(ip)
    const accountId = minted.account_id
    const session = yield* signIn(app, email, { key: minted.key, ip })
    const token = session.management_token
    const session_ = `svc_session=${token}`

    // Receipts for the usage page and the overview's figures.
    for (const cost of [3, 7, 12]) yield* spend(app, minted.key, ip, cost)
    // Keys: one labelled, one rotated (the list shows both states).
    const made = yield* post(app, "/v1/keys", { account_id: accountId, label: "laptop" }, { key: token, ip })
    if (made.status !== 201) throw new Error(`key: ${made.status} ${JSON.stringify(made.body)}`)
    yield* post(
      app,
      "/v1/keys/rotate",
      { key_id: made.body.key_id, account_id: accountId },
      { key: token, ip }
    )
    // A capped key with a child key under it, and its limits page.
    const capped = yield* post(
      app,
      "/v1/keys",
      {
        account_id: accountId,
        label: "agent",
        spend_cap_credits: 500,
        cap_period: "day",
        platforms: ["profnet"],
        may_delegate: true
      },
      { key: token, ip }
    )
    if (capped.status !== 201) throw new Error(`capped key: ${capped.status} ${JSON.stringify(capped.body)}`)
    const child = yield* post(
      app,
      "/v1/keys/child",
      { label: "sub-agent", spend_cap_credits: 50 },
      { key: capped.body.key, ip }
    )
    if (child.status !== 201) throw new Error(`child key: ${child.status} ${JSON.stringify(child.body)}`)

    // An open checkout, and a paid one (the local rail's pay button).
    const open = yield* post(app, "/v1/checkout", { pack: "flex" }, { ip })
    if (open.status !== 200 && open.status !== 201)
      throw new Error(`checkout: ${open.status} ${JSON.stringify(open.body)}`)
    const paid = yield* post(app, "/v1/checkout", { pack: "flex" }, { key: minted.key, ip })
    const paidPath = new URL(paid.body.checkout_url).pathname
    yield* Effect.promise(() => form(baseUrl, `${paidPath}/pay`, {}, ip))

    const portal = yield* post(app, `/v1/portal?account_id=${accountId}`, undefined, { key: token, ip })
    if (portal.status !== 200) throw new Error(`portal: ${portal.status} ${JSON.stringify(portal.body)}`)

    // An OAuth authorization waiting at its consent page (the interaction's cookie and the session's).
    const consent = yield* Effect.promise(async () => {
      const redirectUri = "http://127.0.0.1:9/callback"
      const clientId = await register(baseUrl, redirectUri, "Tour Agent")
      const browser = cookieClient(baseUrl, ip)
      const started = await browser.request(
        authorizeUrl(baseUrl, {
          response_type: "code",
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: pkce().challenge,
          code_challenge_method: "S256",
          scope: "mcp",
          resource: `${baseUrl}/mcp/profnet`
        })
      )
      if (started.location === undefined) throw new Error(`authorize: ${started.status} ${started.text}`)
      const cookies = [...browser.jar].map(([name, value]) => `${name}=${value}`)
      return { path: new URL(started.location).pathname, cookie: [...cookies, session_].join("; ") }
    })

    const account = `account=${accountId}`
    const pages: ReadonlyArray<TourPage> = [
      { name: "home", path: "/", cookie: "" },
      { name: "home-signed-in", path: "/", cookie: session_ },
      { name: "login", path: "/login", cookie: "" },
      { name: "claim", path: `/claim?${account}`, cookie: "" },
      { name: "activate", path: "/activate?user_code=BCDF-GHJK", cookie: "" },
      { name: "recover", path: "/recover", cookie: "" },
      { name: "upgrade", path: "/upgrade", cookie: "" },
      { name: "upgrade-account", path: `/upgrade?${account}`, cookie: "" },
      { name: "checkout", path: new URL(open.body.checkout_url).pathname, cookie: "" },
      { name: "checkout-paid", path: paidPath, cookie: "" },
      {
        name: "portal",
        path: new URL(portal.body.url).pathname + new URL(portal.body.url).search,
        cookie: ""
      },
      { name: "dashboard", path: `/dashboard?${account}`, cookie: session_ },
      { name: "dashboard-usage", path: `/dashboard/usage?${account}`, cookie: session_ },
      { name: "dashboard-keys", path: `/dashboard/keys?${account}`, cookie: session_ },
      {
        name: "dashboard-keys-edit",
        path: `/dashboard/keys/edit?${account}&key=${capped.body.key_id}`,
        cookie: session_
      },
      { name: "dashboard-billing", path: `/dashboard/billing?${account}`, cookie: session_ },
      { name: "dashboard-tokens", path: `/dashboard/tokens?${account}`, cookie: session_ },
      { name: "dashboard-apps", path: `/dashboard/apps?${account}`, cookie: session_ },
      { name: "dashboard-activity", path: `/dashboard/activity?${account}`, cookie: session_ },
      { name: "oauth-consent", path: consent.path, cookie: consent.cookie },
      { name: "docs-errors", path: "/docs/errors", cookie: "" }
    ]
    return { pages, email, accountId } satisfies Tour
  })
