import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { post } from "../identity/support.ts"
import type { TestApp } from "../support/app.ts"

/** The local rail's pay button (a form post answered with a redirect back to the checkout page). */
export const pay = (app: TestApp["Service"], checkoutUrl: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${app.url}${new URL(checkoutUrl).pathname}/pay`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "",
      redirect: "manual"
    })
    await response.arrayBuffer()
    return { status: response.status, location: response.headers.get("location") }
  })

export interface Started {
  readonly session_id: string
  readonly checkout_url: string
  readonly rail: string
  readonly pack: string
  readonly mode: string
  readonly price_usd_cents: number
  readonly credits?: number
  readonly credits_per_month?: number
  readonly expires_at: string
}

/** `POST /v1/checkout`, failing the test unless it answers 200. */
export const startCheckout = (
  app: TestApp["Service"],
  body: { readonly pack: string; readonly rail?: string; readonly account_id?: string },
  options: { key?: string; ip?: string } = {}
) =>
  Effect.map(post(app, "/v1/checkout", body, options), (reply) => {
    if (reply.status !== 200) throw new Error(`checkout: ${reply.status} ${JSON.stringify(reply.body)}`)
    return reply.body as Started
  })

/** Starts a checkout and pays it on the local rail; the first read after payment (with a keyless checkout's key). */
export const buy = (
  app: TestApp["Service"],
  pack: "flex" | "production",
  options: { key?: string; ip?: string } = {}
) =>
  Effect.gen(function* () {
    const started = yield* startCheckout(app, { pack }, options)
    const paid = yield* pay(app, started.checkout_url)
    if (paid.status !== 303) throw new Error(`pay: ${paid.status}`)
    const read = yield* app.call(`/v1/checkout/${started.session_id}`)
    return { started, read: read.body as { status: string; account_id: string; api_key?: string } }
  })

const num = (value: unknown) => Number(value ?? 0)

/** An account's money straight from the store: balances, purchases, grants and what calls charged. */
export const moneyOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const account = yield* sql<{ plan: string; balance_credits: unknown; grant_credits: unknown }>`
      SELECT plan, balance_credits, grant_credits FROM accounts WHERE id = ${accountId}`
    const purchases = yield* sql<{ n: unknown; credits: unknown }>`
      SELECT COUNT(*) AS n, COALESCE(SUM(credits), 0) AS credits FROM purchases WHERE account_id = ${accountId}`
    const grants = yield* sql<{ credits: unknown }>`
      SELECT COALESCE(SUM(credits), 0) AS credits FROM credit_events
      WHERE account_id = ${accountId} AND kind = 'grant'`
    const charged = yield* sql<{ grant: unknown; balance: unknown }>`
      SELECT COALESCE(SUM(charged_grant), 0) AS "grant", COALESCE(SUM(charged_balance), 0) AS balance
      FROM calls WHERE account_id = ${accountId} AND state IN ('settled', 'reserved')`
    const reserved = yield* sql<{ grant: unknown; balance: unknown }>`
      SELECT COALESCE(SUM(reserved_grant), 0) AS "grant", COALESCE(SUM(reserved_balance), 0) AS balance
      FROM calls WHERE account_id = ${accountId} AND state = 'reserved'`
    const row = account[0]
    if (row === undefined) throw new Error(`no account ${accountId}`)
    return {
      plan: row.plan,
      balance: num(row.balance_credits),
      grant: num(row.grant_credits),
      purchases: num(purchases[0]?.n),
      purchased: num(purchases[0]?.credits),
      granted: num(grants[0]?.credits),
      chargedGrant: num(charged[0]?.grant),
      chargedBalance: num(charged[0]?.balance),
      reservedGrant: num(reserved[0]?.grant),
      reservedBalance: num(reserved[0]?.balance)
    }
  }).pipe(Effect.orDie)
