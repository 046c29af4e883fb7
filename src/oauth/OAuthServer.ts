import type { IncomingMessage, ServerResponse } from "node:http"
import { Clock, Context, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type Provider from "oidc-provider"
import type { KoaContext } from "oidc-provider"
import { AppConfig } from "../config.ts"
import { NotFound, RateLimited, Unauthorized } from "../contract/errors.ts"
import { mcpMounts, mountUrl } from "../contract/mcpMounts.ts"
import type { Account } from "../domain/accounts.ts"
import { escapeHtml } from "../domain/html.ts"
import { type LimitRule, windowWords } from "../domain/policy.ts"
import { unrecognizedBearer } from "../domain/secrets.ts"
import { Accounts } from "../services/Accounts.ts"
import { Audit } from "../services/Audit.ts"
import { Credits } from "../services/Credits.ts"
import { Ids } from "../services/Ids.ts"
import { RateLimits } from "../services/RateLimits.ts"
import * as Row from "../store/rows.ts"
import { adoptClient, revokeApp, sqlAdapter, sweepExpired } from "./adapter.ts"
import { clientFetch } from "./clientFetch.ts"
import { loadServerKeys } from "./keys.ts"
import { mcpScope, oauthPolicy, scopes } from "./policy.ts"

/** A connected app: one account's consent to one client (spec: connected apps). */
export interface ConnectedApp {
  readonly app_id: string
  readonly client_name: string
  readonly redirect_host: string
  readonly mounts: ReadonlyArray<string>
  readonly created_at: string
  readonly last_used_at: string | null
}

/** Who an access token stands for: the account, and its app as the receipt's key. */
export interface TokenHolder {
  readonly appId: string
  readonly clientName: string
  readonly account: Account
}

/** What the consent page shows: the client, where it sends the browser back, what it asks for. */
export interface ConsentRequest {
  readonly clientName: string
  readonly redirectUri: string
  readonly redirectHost: string
  readonly resources: ReadonlyArray<string>
}

const AppRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  client_id: Schema.String,
  client_name: Schema.String,
  redirect_host: Schema.String,
  mounts: Schema.String,
  created_at: Row.Int,
  last_used_at: Row.NullableInt
})
const decodeApps = Row.decoder(AppRow, "oauth_apps")

const knownScopes = new Set<string>(scopes)
const iso = (ms: number) => new Date(ms).toISOString()
const listOf = (value: unknown) =>
  typeof value === "string" ? [value] : Array.isArray(value) ? value.filter((v) => typeof v === "string") : []

const listing = (row: typeof AppRow.Type): ConnectedApp => ({
  app_id: row.id,
  client_name: row.client_name,
  redirect_host: row.redirect_host,
  mounts: row.mounts.split(" ").filter((mount) => mount.length > 0),
  created_at: iso(row.created_at),
  last_used_at: row.last_used_at === null ? null : iso(row.last_used_at)
})

const inactiveToken = (why: string) =>
  new Unauthorized({
    message: `${why} Reconnect the app (it signs in again in the browser), or use a key in the Authorization header.`
  })

type Node = { readonly req: IncomingMessage; readonly res: ServerResponse }

/** Who sent a request the library serves: its address, and its key in every per-IP rule. */
export interface OAuthClientAddress {
  readonly address: string
  readonly perIpKey: string
}

/**
 * The OAuth authorization server (oidc-provider, in process, storing through our `SqlClient`) and
 * what the rest of the service asks of it: serve its endpoints, finish an interaction with an
 * account's consent, resolve an access token for an MCP mount, list and revoke connected apps.
 */
export class OAuthServer extends Context.Service<
  OAuthServer,
  {
    /**
     * The per-IP limits in front of the library, taken before it stores anything: a client
     * registration (a stored client that never expires) and an authorization request (each may
     * open a sign-in interaction). Finishing an interaction is not another request.
     */
    readonly admitRegistration: (perIpKey: string) => Effect.Effect<void, RateLimited>
    readonly admitAuthorization: (perIpKey: string) => Effect.Effect<void, RateLimited>
    /** Hands a request for `/oauth/*` or the metadata to the library, which answers it itself. */
    readonly serve: (node: Node, client: OAuthClientAddress) => Effect.Effect<void>
    /** What an interaction (`/login/{uid}`) asks; fails when its cookie is gone or expired. */
    readonly interaction: (node: Node, uid: string) => Effect.Effect<ConsentRequest | undefined>
    /** The account consents: its app is recorded (first time: the one-time grant), back to the client. */
    readonly approve: (
      node: Node,
      uid: string,
      input: { readonly accountId: string; readonly email: string }
    ) => Effect.Effect<string | undefined, SqlError>
    readonly deny: (node: Node, uid: string) => Effect.Effect<string | undefined>
    readonly authenticate: (token: string, resource: string) => Effect.Effect<TokenHolder, Unauthorized>
    readonly apps: (accountId: string) => Effect.Effect<ReadonlyArray<ConnectedApp>, SqlError>
    readonly revoke: (
      accountId: string,
      appId: string
    ) => Effect.Effect<{ readonly app_id: string; readonly revoked_at: string }, NotFound | SqlError>
    /** Forgets expired authorization records; returns how many. */
    readonly sweepExpired: Effect.Effect<number, SqlError>
  }
>()("oauth/OAuthServer") {
  static readonly layer = Layer.effect(
    OAuthServer,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const accounts = yield* Accounts
      const credits = yield* Credits
      const ids = yield* Ids
      const audit = yield* Audit
      const limits = yield* RateLimits
      const services = yield* Effect.context<SqlClient.SqlClient>()
      const run = <A>(effect: Effect.Effect<A, SqlError, SqlClient.SqlClient>) =>
        Effect.runPromiseWith(services)(effect)
      const resources = new Set(mcpMounts.map((mount) => mountUrl(config.baseUrl, mount)))
      const runFork = Effect.runForkWith(yield* Effect.context<never>())
      const runPromise = Effect.runPromiseWith(yield* Effect.context<never>())
      const oauthLimits = config.policy.oauth
      const admitting = (prefix: string, rule: LimitRule, message: string) => (perIpKey: string) =>
        Effect.flatMap(
          limits.take({ key: `${prefix}:${perIpKey}`, limit: rule.limit, window: rule.windowMs }),
          (taken) =>
            taken.allowed
              ? Effect.void
              : Effect.fail(new RateLimited({ message, retry_after_seconds: taken.retryAfterSeconds }))
        )
      const registrations = oauthPolicy.registrationsPerIp
      const admitRegistration = admitting(
        "oauth-register",
        registrations,
        `Too many client registrations from this address; at most ${registrations.limit} per ${windowWords(registrations.windowMs)}. Retry after retry_after_seconds, or use a Client ID Metadata Document.`
      )
      const authorizations = {
        limit: oauthLimits.authorizationsPerIp,
        windowMs: oauthLimits.authorizationWindowMs
      }
      const admitAuthorization = admitting(
        "oauth-authorize",
        authorizations,
        `This address has started ${authorizations.limit} app sign-ins in ${windowWords(authorizations.windowMs)}, the most this service allows.`
      )
      if (config.oauthAllowPrivateClientUrls)
        yield* Effect.logWarning(
          "OAUTH_ALLOW_PRIVATE_CLIENT_URLS is on: client documents may be fetched from loopback and private addresses (tests only)"
        )
      // The per-IP key of each request the library is serving, for its hooks (they get the
      // request), and the documents each request fetched.
      const clientKeys = new WeakMap<IncomingMessage, string>()
      const fetchedBy = new WeakMap<IncomingMessage, Set<string>>()
      /**
       * A Client ID Metadata Document fetch (the library's cache missed) counts against the client
       * address that caused it, once per request and document. Without a request (our own pages
       * looking up the client of an interaction that passed the authorization limit) it is allowed.
       */
      const clientFetchAllowed = (ctx: KoaContext | undefined, clientId: string) =>
        runPromise(
          Effect.gen(function* () {
            const key = ctx === undefined ? undefined : clientKeys.get(ctx.req)
            if (ctx === undefined || key === undefined) return { _tag: "Allowed" } as const
            const fetched = fetchedBy.get(ctx.req) ?? new Set<string>()
            fetchedBy.set(ctx.req, fetched)
            if (fetched.has(clientId)) return { _tag: "Again" } as const
            fetched.add(clientId)
            const taken = yield* limits.take({
              key: `oauth-client-fetch:${key}`,
              limit: oauthLimits.clientFetchesPerIp,
              window: oauthLimits.clientFetchWindowMs
            })
            if (taken.allowed) return { _tag: "Allowed" } as const
            return {
              _tag: "Limited",
              message: `This address made ${oauthLimits.clientFetchesPerIp} client metadata document fetches in ${Math.round(oauthLimits.clientFetchWindowMs / 60_000)} minutes, the most allowed. Retry in ${Math.max(1, Math.ceil(taken.retryAfterSeconds / 60))} minutes.`
            } as const
          })
        )
      // The provider (and oidc-provider itself) is made at the first OAuth request, not at start-up.
      const server = yield* Effect.cached(
        Effect.gen(function* () {
          const keys = yield* loadServerKeys.pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            Effect.orDie
          )
          const { makeProvider } = yield* Effect.promise(() => import("./provider.ts"))
          const provider: Provider = makeProvider(
            config.baseUrl,
            {
              adapter: sqlAdapter(run, { unusedClientMs: config.policy.oauth.unusedClientMs }),
              signingKey: keys.signingKey,
              cookieKeys: keys.cookieKeys,
              resources,
              renderError: (ctx, out) => {
                ctx.type = "html"
                ctx.body = errorPage(config.baseUrl, out)
              },
              fetch: clientFetch({
                allowPrivate: config.oauthAllowPrivateClientUrls,
                timeoutMs: oauthLimits.clientFetchTimeoutMs,
                maxBytes: oauthLimits.clientDocumentMaxBytes
              }),
              clientFetchAllowed,
              clientDocuments: {
                maxBytes: oauthLimits.clientDocumentMaxBytes,
                cacheMinSeconds: oauthLimits.clientDocumentCacheMinSeconds,
                cacheMaxSeconds: oauthLimits.clientDocumentCacheMaxSeconds
              }
            },
            (error) =>
              runFork(
                Effect.logWarning(
                  "OAuth server error",
                  error instanceof Error ? error.message : String(error)
                )
              )
          )
          return { provider, callback: provider.callback() }
        })
      )
      const base = new URL(config.baseUrl)

      const serve = Effect.fn("OAuthServer.serve")(function* (
        { req, res }: Node,
        client: OAuthClientAddress
      ) {
        // Endpoint URLs and Secure cookies follow the request's headers: pin them to BASE_URL.
        req.headers.host = base.host
        req.headers["x-forwarded-host"] = base.host
        req.headers["x-forwarded-proto"] = base.protocol.slice(0, -1)
        req.headers["x-forwarded-for"] = client.address
        clientKeys.set(req, client.perIpKey)
        const { callback } = yield* server
        yield* Effect.promise(() => callback(req, res))
      })

      /** The interaction of this browser's cookie, when it is the one the URL names and still live. */
      const details = ({ req, res }: Node, uid: string) =>
        Effect.flatMap(server, ({ provider }) =>
          Effect.tryPromise(() => provider.interactionDetails(req, res)).pipe(
            Effect.option,
            Effect.map((found) =>
              found._tag === "Some" && found.value.uid === uid ? found.value : undefined
            )
          )
        )

      const interaction = Effect.fn("OAuthServer.interaction")(function* (node: Node, uid: string) {
        const found = yield* details(node, uid)
        if (found === undefined) return undefined
        const { provider } = yield* server
        const clientId = String(found.params.client_id)
        const client = yield* Effect.promise(() => provider.Client.find(clientId))
        const redirectUri = String(found.params.redirect_uri ?? "")
        return {
          clientName: client?.clientName ?? clientId,
          redirectUri,
          redirectHost: URL.canParse(redirectUri) ? new URL(redirectUri).host : redirectUri,
          resources: listOf(found.params.resource)
        } satisfies ConsentRequest
      })

      const approve = Effect.fn("OAuthServer.approve")(function* (
        node: Node,
        uid: string,
        input: { readonly accountId: string; readonly email: string }
      ) {
        const found = yield* details(node, uid)
        if (found === undefined) return undefined
        const { provider } = yield* server
        const clientId = String(found.params.client_id)
        const client = yield* Effect.promise(() => provider.Client.find(clientId))
        const requested = String(found.params.scope ?? mcpScope).split(" ")
        const granted = listOf(found.params.resource).filter((resource) => resources.has(resource))
        const previous =
          found.grantId === undefined
            ? undefined
            : yield* Effect.promise(() => provider.Grant.find(found.grantId!))
        const grant =
          previous !== undefined && previous.accountId === input.accountId
            ? previous
            : new provider.Grant({ accountId: input.accountId, clientId })
        // `mcp` is one of the server's scopes as well as the resources' scope: both are granted.
        const oidc = requested.filter((scope) => knownScopes.has(scope))
        if (oidc.length > 0) grant.addOIDCScope(oidc.join(" "))
        for (const resource of granted) grant.addResourceScope(resource, mcpScope)
        const grantId = yield* Effect.promise(() => grant.save())
        const redirectUri = String(found.params.redirect_uri ?? "")
        const now = yield* Clock.currentTimeMillis
        const mounts = granted.map((resource) => new URL(resource).pathname)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* Effect.provideService(adoptClient(clientId), SqlClient.SqlClient, sql)
            const rows =
              yield* sql`SELECT id, account_id, client_id, client_name, redirect_host, mounts, created_at,
                last_used_at FROM oauth_apps
              WHERE account_id = ${input.accountId} AND client_id = ${clientId} AND revoked_at IS NULL
              FOR UPDATE`.pipe(Effect.flatMap(decodeApps))
            const existing = rows[0]
            if (existing !== undefined) {
              const all = [...new Set([...existing.mounts.split(" "), ...mounts])].filter((m) => m.length > 0)
              yield* sql`UPDATE oauth_apps SET grant_id = ${grantId}, mounts = ${all.join(" ")}
                WHERE id = ${existing.id}`
              yield* audit.record(input.accountId, "app.connected", existing.id, {
                kind: "email",
                id: input.email
              })
              return
            }
            const appId = yield* ids.newId("app")
            yield* sql`INSERT INTO oauth_apps
                (id, account_id, client_id, client_name, redirect_host, mounts, grant_id, created_at)
              VALUES (${appId}, ${input.accountId}, ${clientId}, ${client?.clientName ?? clientId},
                ${URL.canParse(redirectUri) ? new URL(redirectUri).host : ""}, ${mounts.join(" ")}, ${grantId}, ${now})`
            // An app is the account's way in, like a first key: the one-time grant (once per email).
            yield* credits.grantOnce({ accountId: input.accountId, email: input.email, keyId: appId })
            yield* audit.record(input.accountId, "app.connected", appId, { kind: "email", id: input.email })
          })
        )
        const { req, res } = node
        return yield* Effect.promise(() =>
          provider.interactionResult(
            req,
            res,
            { login: { accountId: input.accountId }, consent: { grantId } },
            { mergeWithLastSubmission: false }
          )
        )
      })

      const deny = Effect.fn("OAuthServer.deny")(function* (node: Node, uid: string) {
        const found = yield* details(node, uid)
        if (found === undefined) return undefined
        const { provider } = yield* server
        return yield* Effect.promise(() =>
          provider.interactionResult(
            node.req,
            node.res,
            { error: "access_denied", error_description: "The person declined to connect this app." },
            { mergeWithLastSubmission: false }
          )
        )
      })

      const authenticate = Effect.fn("OAuthServer.authenticate")(function* (token: string, resource: string) {
        const { provider } = yield* server
        const found = yield* Effect.promise(() => provider.AccessToken.find(token))
        if (found === undefined) return yield* new Unauthorized({ message: unrecognizedBearer })
        const audiences = listOf(found.aud)
        if (!audiences.includes(resource))
          return yield* inactiveToken(
            `This access token is for another MCP endpoint (${audiences.join(", ") || "none"}), not ${resource}.`
          )
        const rows =
          yield* sql`SELECT id, account_id, client_id, client_name, redirect_host, mounts, created_at,
            last_used_at FROM oauth_apps
          WHERE account_id = ${found.accountId} AND client_id = ${found.clientId} AND revoked_at IS NULL`.pipe(
            Effect.flatMap(decodeApps),
            Effect.orDie
          )
        const app = rows[0]
        if (app === undefined) return yield* inactiveToken("This access token's app was disconnected.")
        const account = yield* Effect.orDie(accounts.get(app.account_id))
        if (account === undefined || account.state !== "active")
          return yield* new Unauthorized({ message: "The account of this app is suspended." })
        const now = yield* Clock.currentTimeMillis
        if (app.last_used_at === null || now - app.last_used_at >= oauthPolicy.lastUsedResolutionMs) {
          yield* Effect.orDie(sql`UPDATE oauth_apps SET last_used_at = ${now} WHERE id = ${app.id}`)
        }
        return { appId: app.id, clientName: app.client_name, account } satisfies TokenHolder
      })

      const apps = Effect.fn("OAuthServer.apps")(function* (accountId: string) {
        const rows =
          yield* sql`SELECT id, account_id, client_id, client_name, redirect_host, mounts, created_at,
            last_used_at FROM oauth_apps WHERE account_id = ${accountId} AND revoked_at IS NULL
          ORDER BY created_at, id`.pipe(Effect.flatMap(decodeApps))
        return rows.map(listing)
      })

      const revoke = Effect.fn("OAuthServer.revoke")(function* (accountId: string, appId: string) {
        const now = yield* Clock.currentTimeMillis
        const revoked = yield* sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE oauth_apps SET revoked_at = ${now}
              WHERE id = ${appId} AND account_id = ${accountId} AND revoked_at IS NULL
              RETURNING id, account_id, client_id, client_name, redirect_host, mounts, created_at, last_used_at`.pipe(
              Effect.flatMap(decodeApps)
            )
            const app = rows[0]
            if (app !== undefined) {
              yield* Effect.provideService(revokeApp(app.account_id, app.client_id), SqlClient.SqlClient, sql)
              yield* audit.record(app.account_id, "app.revoked", app.id)
            }
            return app
          })
        )
        if (revoked === undefined)
          return yield* new NotFound({
            message: `No connected app ${appId} on account ${accountId}. GET /v1/apps lists them.`,
            param: "app_id"
          })
        return { app_id: revoked.id, revoked_at: iso(now) }
      })

      return OAuthServer.of({
        admitRegistration,
        admitAuthorization,
        serve,
        interaction,
        approve,
        deny,
        authenticate,
        apps,
        revoke,
        sweepExpired: Effect.provideService(sweepExpired, SqlClient.SqlClient, sql)
      })
    })
  )
}

/** The library's error page, in the service's words: what went wrong, and what to do. */
const errorPage = (baseUrl: string, out: Record<string, string>) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Could not connect the app</title></head>
<body style="font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem"><main><h1>Could not connect the app</h1>
<p>${escapeHtml(out.error_description ?? out.error ?? "The request was not valid.")}</p>
<p><code>${escapeHtml(out.error ?? "invalid_request")}</code></p>
<p>Start again from the app. <a href="${escapeHtml(baseUrl)}/docs">Docs</a></p></main></body></html>`

/** Runs the sweeper on a schedule beside the rest of the housekeeping (see `service.ts`). */
export const OAuthHousekeeping = Layer.effectDiscard(
  Effect.gen(function* () {
    const oauth = yield* OAuthServer
    yield* Effect.forkScoped(
      oauth.sweepExpired.pipe(
        Effect.catchCause((cause) => Effect.logWarning("OAuth sweep failed", cause)),
        Effect.repeat(Schedule.spaced("1 minute"))
      )
    )
  })
)
