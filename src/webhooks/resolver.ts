import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import { Context } from "effect"

/**
 * How a webhook URL's host is resolved, at creation and at every delivery: the system's resolver,
 * unless a test gives its own (a name whose answer changes between two lookups).
 */
export const WebhookResolver = Context.Reference<(hostname: string) => Promise<ReadonlyArray<LookupAddress>>>(
  "webhooks/WebhookResolver",
  { defaultValue: () => (hostname) => lookup(hostname, { all: true, verbatim: true }) }
)
