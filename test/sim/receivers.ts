import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Webhook } from "standardwebhooks"
import type { Violation } from "../../bench/invariants.ts"
import { ClientFetchError, type OutboundAnswer } from "../../src/oauth/clientFetch.ts"
import type { WebhookSend } from "../../src/webhooks/transport.ts"

/** A client's webhook receiver, as the schedule sets it: answering, failing (500), or slow. */
export interface Receiver {
  readonly client: number
  /** The account the endpoint was registered for (a client that mints again has a new one). */
  readonly account: string
  readonly url: string
  readonly secret: string
  readonly webhookId: string
  mode: "ok" | "fail" | "slow"
  /** How long a slow receiver takes to answer (virtual time; past the timeout it never answers in time). */
  latencyMs: number
  /** When the client deleted the endpoint (virtual time), once it has. */
  deletedAt: number | undefined
}

/** One request a receiver got: what a receiver checks of it (the signature), and what it carried. */
export interface Arrival {
  readonly webhookId: string
  readonly eventId: string
  readonly body: string
  readonly at: number
  /** The `webhook-signature` is the endpoint's secret's over this id, timestamp and body. */
  readonly signed: boolean
  /** Its `webhook-timestamp` is the moment it was sent. */
  readonly fresh: boolean
  readonly answered: number | "timeout"
  /** The receiver was slow (answered late, or not within the timeout). */
  readonly slow: boolean
}

export interface Receivers {
  readonly byUrl: Map<string, Receiver>
  readonly byClient: Map<number, Receiver>
  readonly arrivals: Array<Arrival>
  /** Requests that reached a receiver whose endpoint had been deleted before they were sent. */
  readonly afterDeletion: Array<Arrival>
}

export const makeReceivers = (): Receivers => ({
  byUrl: new Map(),
  byClient: new Map(),
  arrivals: [],
  afterDeletion: []
})

/** The URL of a client's receiver: a public name the simulation's resolver answers (`simResolver`). */
export const receiverUrl = (client: number, generation: number) =>
  `https://hooks-${client}.receiver.example/sim/${generation}`

/** Every receiver's name resolves to one public address (no DNS in a run). */
export const simResolver = (_hostname: string) =>
  Promise.resolve([{ address: "93.184.215.14", family: 4 as const }])

/**
 * The deliveries' transport in a run: the request reaches the client's receiver in process, which
 * checks its signature as a receiver would (Standard Webhooks, the moment of virtual time it was
 * sent), records it, and answers as its mode says: 200, 500, or after its latency of virtual time
 * (no answer within the delivery's timeout is a timeout). An unknown URL does not connect.
 */
export const simTransport =
  (receivers: Receivers): WebhookSend =>
  (href, outbound, options) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      const receiver = receivers.byUrl.get(href)
      if (receiver === undefined) return Effect.fail(new ClientFetchError(`${href}: connection refused`))
      const headers = outbound.headers
      const body = outbound.body ?? ""
      const eventId = headers["webhook-id"] ?? ""
      const timestamp = Number(headers["webhook-timestamp"])
      let signed = false
      try {
        signed =
          new Webhook(receiver.secret).sign(eventId, new Date(timestamp * 1000), body) ===
          headers["webhook-signature"]
      } catch {}
      const slowFor = receiver.mode === "slow" ? receiver.latencyMs : 0
      const timedOut = slowFor >= options.timeoutMs
      const arrival: Arrival = {
        webhookId: receiver.webhookId,
        eventId,
        body,
        at,
        signed,
        fresh: Math.abs(at / 1000 - timestamp) <= 5 * 60,
        answered: timedOut ? "timeout" : receiver.mode === "fail" ? 500 : 200,
        slow: slowFor > 0
      }
      receivers.arrivals.push(arrival)
      if (receiver.deletedAt !== undefined && at > receiver.deletedAt) receivers.afterDeletion.push(arrival)
      const answer: OutboundAnswer = {
        status: arrival.answered === "timeout" ? 0 : arrival.answered,
        headers: {},
        body: Buffer.from(arrival.answered === 200 ? "ok" : "no"),
        truncated: false
      }
      if (timedOut)
        return Effect.andThen(
          Effect.sleep(options.timeoutMs),
          Effect.fail(new ClientFetchError(`${href} did not answer within ${options.timeoutMs} ms`))
        )
      return slowFor > 0 ? Effect.as(Effect.sleep(slowFor), answer) : Effect.succeed(answer)
    })

const violation = (invariant: string, rows: ReadonlyArray<unknown>): Violation => ({
  invariant,
  rows,
  detail: rows
    .slice(0, 3)
    .map((row) => JSON.stringify(row))
    .join("; ")
})

/** What the receivers saw that breaks a rule at once: a request after the endpoint's deletion, a bad signature. */
export const arrivalChecks = (receivers: Receivers, from: number): Array<Violation> => {
  const found: Array<Violation> = []
  const late = receivers.afterDeletion.map(({ webhookId, eventId, at }) => ({ webhookId, eventId, at }))
  if (late.length > 0) found.push(violation("no delivery to an endpoint after its deletion", late))
  const forged = receivers.arrivals
    .slice(from)
    .filter((arrival) => !arrival.signed || !arrival.fresh)
    .map(({ webhookId, eventId, at, signed }) => ({ webhookId, eventId, at, signed }))
  if (forged.length > 0)
    found.push(
      violation(
        "every delivery carries its endpoint's Standard Webhooks signature, stamped when it is sent",
        forged
      )
    )
  return found
}

/**
 * At the end of a run, once every receiver has recovered and the retries have had their time:
 * every request carried its event's body as recorded (and its id), and every event queued for an
 * endpoint still registered was delivered at least once (a 200 from its receiver) while its
 * retries lasted (`retryForMs`).
 */
export const deliveryChecks = (receivers: Receivers, end: number, retryForMs: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const found: Array<Violation> = []
    const events = yield* sql<{ id: string; payload: string }>`SELECT id, payload FROM webhook_events`
    const payloads = new Map(events.map((row) => [row.id, row.payload]))
    const altered = receivers.arrivals
      .filter((arrival) => {
        const recorded = payloads.get(arrival.eventId)
        let id: unknown
        try {
          id = JSON.parse(arrival.body).id
        } catch {}
        return recorded === undefined || recorded !== arrival.body || id !== arrival.eventId
      })
      .map(({ webhookId, eventId, body }) => ({ webhookId, eventId, body: body.slice(0, 120) }))
    if (altered.length > 0) found.push(violation("every delivery carries its event as recorded", altered))
    const deliveries = yield* sql<{
      event_id: string
      endpoint_id: string
      state: string
      created_at: string | number
    }>`SELECT event_id, endpoint_id, state, created_at FROM webhook_deliveries ORDER BY created_at, event_id`
    const live = new Set(
      [...receivers.byUrl.values()].filter((r) => r.deletedAt === undefined).map((r) => r.webhookId)
    )
    const answered = new Set(
      receivers.arrivals
        .filter((arrival) => arrival.answered === 200)
        .map((arrival) => `${arrival.webhookId} ${arrival.eventId}`)
    )
    const undelivered = deliveries
      .filter(
        (row) =>
          live.has(row.endpoint_id) &&
          Number(row.created_at) >= end - retryForMs &&
          (row.state !== "delivered" || !answered.has(`${row.endpoint_id} ${row.event_id}`))
      )
      .map(({ event_id, endpoint_id, state }) => ({ event_id, endpoint_id, state }))
    if (undelivered.length > 0)
      found.push(
        violation(
          "every event of an endpoint whose receiver recovers is delivered at least once",
          undelivered
        )
      )
    return found
  })
