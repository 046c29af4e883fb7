import type { Pack } from "../../../domain/plans.ts"

/** Money, counts and dates as the checkout, upgrade and portal pages write them. */
export const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`

export const count = (n: number) => n.toLocaleString("en-US")

/** A UTC day and minute, the same for every reader: "2026-11-23 15:49 UTC". */
export const when = (millis: number) => `${new Date(millis).toISOString().slice(0, 16).replace("T", " ")} UTC`

export const packSummary = (pack: Pack) =>
  pack.mode === "subscription"
    ? `${pack.pack}: ${dollars(pack.price_usd_cents)} a month for ${count(pack.credits_per_month ?? 0)} credits a month`
    : `${pack.pack}: ${dollars(pack.price_usd_cents)} once for ${count(pack.credits ?? 0)} credits`

/** What a payer reads for a rail's name. */
export const railLabel = (rail: string) =>
  rail === "local"
    ? "Test-mode checkout (no card, no money moves)"
    : rail === "stripe"
      ? "Card, through Stripe"
      : rail
