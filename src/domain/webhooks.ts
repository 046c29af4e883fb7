/**
 * Webhooks as the product defines them: the events an account can subscribe to, the body every
 * delivery carries, and the retry schedule. Pure; delivery itself is `src/webhooks/`.
 */

/** Every event an endpoint can subscribe to. `ping` is sent by `POST /v1/webhooks/test` only. */
export const webhookEventTypes = [
  "balance.low",
  "credits.purchased",
  "key.cap_reached",
  "key.created",
  "key.revoked",
  "subscription.renewed",
  "subscription.ended",
  "topup.succeeded",
  "topup.failed",
  "ping"
] as const

export type WebhookEventType = (typeof webhookEventTypes)[number]

export const isWebhookEventType = (text: string): text is WebhookEventType =>
  (webhookEventTypes as ReadonlyArray<string>).includes(text)

/**
 * The body of one event, as it is signed and sent on every attempt:
 * `{ "type", "id", "created_at", "account_id", "data" }`. `id` is also the `webhook-id` header.
 */
export const webhookPayload = (event: {
  readonly type: WebhookEventType
  readonly id: string
  readonly createdAt: number
  readonly accountId: string
  readonly data: Record<string, unknown>
}): string =>
  JSON.stringify({
    type: event.type,
    id: event.id,
    created_at: new Date(event.createdAt).toISOString(),
    account_id: event.accountId,
    data: event.data
  })

export interface RetrySchedule {
  /** The wait after the first failed attempt; it doubles after each further one. */
  readonly firstMs: number
  /** The longest wait between two attempts. */
  readonly maxMs: number
  /** How long after its event a delivery is still tried. */
  readonly forMs: number
}

/** The wait after the `attempts`-th failed attempt: `firstMs` doubling, at most `maxMs`. */
export const retryDelayMs = (schedule: RetrySchedule, attempts: number): number =>
  Math.min(schedule.firstMs * 2 ** Math.min(Math.max(0, attempts - 1), 40), schedule.maxMs)

/**
 * When to try a delivery again after its `attempts`-th failure at `now`, or undefined when it is
 * given up: its next attempt would fall after `forMs` from its event.
 */
export const nextAttemptAt = (
  schedule: RetrySchedule,
  attempts: number,
  now: number,
  createdAt: number
): number | undefined => {
  const at = now + retryDelayMs(schedule, attempts)
  return at > createdAt + schedule.forMs ? undefined : at
}

/** `whsec_` and the base64 of 32 random bytes: the Standard Webhooks secret format. */
export const makeWebhookSecret = (random: Uint8Array): string =>
  `whsec_${Buffer.from(random.subarray(0, 32)).toString("base64")}`

/**
 * Why `text` cannot be a webhook URL before anything is resolved, or undefined: an absolute URL of
 * at most 2048 characters, `https` (or `http` when private addresses are allowed: a self-hosted
 * network), without credentials.
 */
export const webhookUrlRefusal = (text: string, allowPrivate: boolean): string | undefined => {
  if (text.length > 2048) return "The URL is longer than 2048 characters."
  const url = URL.parse(text)
  if (url === null) return "This is not an absolute URL; send one such as https://example.com/hooks/svc."
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:"))
    return "A webhook URL must start with https:// (deliveries are signed, and never sent in clear)."
  if (url.username !== "" || url.password !== "")
    return "A webhook URL cannot carry credentials (user:password@); the signature authenticates each delivery."
  if (url.hostname === "") return "The URL names no host."
  return undefined
}
