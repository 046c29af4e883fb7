import { Context, type Effect } from "effect"
import {
  type ClientFetchError,
  type OutboundAnswer,
  type OutboundOptions,
  type OutboundRequest,
  pinnedRequest
} from "../oauth/clientFetch.ts"

/**
 * How a webhook delivery's request goes out: `pinnedRequest` (the URL resolved and refused when
 * private, the connection pinned to the checked address, no redirect, the timeouts, the capped
 * answer), unless a test or the simulation gives its own receiver. The delivery's rules (signing,
 * leases, retries, backoff, disabling) stay in `Deliveries` whichever answers.
 */
export const WebhookTransport = Context.Reference<WebhookSend>("webhooks/WebhookTransport", {
  defaultValue: () => pinnedRequest
})

/** One delivery's request to the endpoint's URL, and its answer (read up to the cap). */
export type WebhookSend = (
  href: string,
  outbound: OutboundRequest,
  options: OutboundOptions
) => Effect.Effect<OutboundAnswer, ClientFetchError>
