import { Clock, Context, Effect, Layer, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import { InvalidInput, type RateLimited } from "../contract/errors.ts"
import { type AuditAction, type AuditActor, actorKinds } from "../domain/audit.ts"
import * as Row from "../store/rows.ts"
import { Ids } from "./Ids.ts"
import { RateLimits } from "./RateLimits.ts"

/**
 * Who is acting, and from where, in the work being done: a surface sets it where a request acts as
 * someone (a management token's email, a key); otherwise it is the service's own, from the address
 * of the request being served, if any (`RequestAddress`).
 */
export interface AuditOrigin {
  readonly actor: AuditActor
  readonly ip: string | null
}

/** Work no request asked for (a renewal, a top-up paid by the worker) is the service's own. */
export const serviceOrigin: AuditOrigin = { actor: { kind: "service", id: "svc" }, ip: null }

export const CurrentAuditOrigin = Context.Reference<AuditOrigin>("services/Audit/CurrentAuditOrigin", {
  defaultValue: () => serviceOrigin
})

/**
 * The client address of an HTTP request as the per-IP rules count it. The HTTP surface provides it
 * once for the server; a change recorded while a request is served, by an origin that names no
 * address (the default, or `asActor`), is recorded from that request's address. Looked up only
 * when a change is recorded: most requests change nothing, and none pays for it up front.
 */
export const RequestAddress = Context.Reference<
  (request: HttpServerRequest.HttpServerRequest) => string | null
>("services/Audit/RequestAddress", { defaultValue: () => () => null })

/** The address a change is recorded from: the origin's, else the request's being served, else none. */
const addressOf = (origin: AuditOrigin): Effect.Effect<string | null> =>
  origin.ip !== null
    ? Effect.succeed(origin.ip)
    : Effect.flatMap(Effect.serviceOption(HttpServerRequest.HttpServerRequest), (request) =>
        request._tag === "None"
          ? Effect.succeed(null)
          : Effect.map(RequestAddress, (address) => address(request.value))
      )

/** Runs `effect` as `origin`: every change it makes is recorded with that actor and address. */
export const asOrigin =
  (origin: AuditOrigin) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(effect, CurrentAuditOrigin, origin)

/** Runs `effect` as `actor`, from the current request's address. */
export const asActor =
  (actor: AuditActor) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(CurrentAuditOrigin, (origin) => asOrigin({ actor, ip: origin.ip })(effect))

export interface AuditEvent {
  readonly event_id: string
  readonly at: string
  readonly action: string
  readonly actor: AuditActor
  readonly target: string | null
  readonly ip: string | null
}

export interface AuditPage {
  readonly events: ReadonlyArray<AuditEvent>
  readonly next_cursor: string | null
}

const decodeEvents = Row.decoder(
  Schema.Struct({
    seq: Row.Int,
    id: Schema.String,
    at: Row.Int,
    action: Schema.String,
    actor_kind: Schema.Literals(actorKinds),
    actor_id: Schema.String,
    target: Schema.NullOr(Schema.String),
    ip: Schema.NullOr(Schema.String)
  }),
  "audit_events"
)

/**
 * The audit log. `record` joins the caller's transaction (like `WebhookEvents.emit`), so the row
 * commits or rolls back with the change; the actor and address are the current request's
 * (`CurrentAuditOrigin`). `list` pages an account's events newest first.
 */
export class Audit extends Context.Service<
  Audit,
  {
    /** Records a change to the account, by `actor` when given, else by the current request's actor. */
    readonly record: (
      accountId: string,
      action: AuditAction,
      target: string | null,
      actor?: AuditActor
    ) => Effect.Effect<void, SqlError>
    /**
     * One page of the account's log, newest first: at most AUDIT_READS_PER_ACCOUNT (120) pages a
     * minute per account, RATE_LIMITED (with retry_after_seconds) past them.
     */
    readonly list: (
      accountId: string,
      page: { readonly limit: number; readonly cursor?: string | undefined }
    ) => Effect.Effect<AuditPage, InvalidInput | RateLimited | SqlError>
  }
>()("services/Audit") {
  static readonly layer = Layer.effect(
    Audit,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const limits = yield* RateLimits
      const { auditReadsPerAccount } = (yield* AppConfig).policy

      const record = Effect.fn("Audit.record")(function* (
        accountId: string,
        action: AuditAction,
        target: string | null,
        actor?: AuditActor
      ) {
        const origin = yield* CurrentAuditOrigin
        const who = actor ?? origin.actor
        const ip = yield* addressOf(origin)
        const now = yield* Clock.currentTimeMillis
        const id = yield* ids.newId("aud")
        yield* sql`INSERT INTO audit_events (id, account_id, at, action, actor_kind, actor_id, target, ip)
          VALUES (${id}, ${accountId}, ${now}, ${action}, ${who.kind}, ${who.id},
            ${target}, ${ip})`
      })

      const list = Effect.fn("Audit.list")(function* (
        accountId: string,
        page: { readonly limit: number; readonly cursor?: string | undefined }
      ) {
        yield* limits.takeAll([{ key: `audit-reads:${accountId}`, rule: auditReadsPerAccount }], "audit log")
        // A page's cursor is the id of its last event, found in this account's log only: opaque (no
        // position in the service's log shows through), and another account's cursor is refused.
        const [from] =
          page.cursor === undefined
            ? [undefined]
            : yield* sql`SELECT seq, id, at, action, actor_kind, actor_id, target, ip FROM audit_events
                WHERE id = ${page.cursor.slice(0, 128)} AND account_id = ${accountId}`.pipe(
                Effect.flatMap(decodeEvents)
              )
        if (page.cursor !== undefined && from === undefined)
          return yield* new InvalidInput({
            message: "This cursor is not one GET /v1/audit gave for this account. Start again without it.",
            param: "cursor"
          })
        const before = from?.seq
        const rows = yield* sql`SELECT seq, id, at, action, actor_kind, actor_id, target, ip FROM audit_events
          WHERE account_id = ${accountId} AND seq < ${before ?? Number.MAX_SAFE_INTEGER}
          ORDER BY seq DESC LIMIT ${page.limit + 1}`.pipe(Effect.flatMap(decodeEvents))
        const shown = rows.slice(0, page.limit)
        const last = shown[shown.length - 1]
        return {
          events: shown.map(
            (row): AuditEvent => ({
              event_id: row.id,
              at: new Date(row.at).toISOString(),
              action: row.action,
              actor: { kind: row.actor_kind, id: row.actor_id },
              target: row.target,
              ip: row.ip
            })
          ),
          next_cursor: rows.length > page.limit && last !== undefined ? last.id : null
        }
      })

      return Audit.of({ record, list })
    })
  )
}
