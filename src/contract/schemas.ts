import { Schema } from "effect"
import { ReceiptSchema } from "./envelope.ts"

/** Response bodies of the account routes. */
export const FreeTierInfo = Schema.Struct({
  credits_per_ip_day: Schema.Int,
  freshness: Schema.String,
  first_page_only: Schema.Boolean
})

export const MintResponse = Schema.Struct({
  key: Schema.String,
  key_hint: Schema.String,
  account_id: Schema.String,
  plan: Schema.Literal("trial"),
  free_tier: FreeTierInfo,
  upgrade_url: Schema.String,
  setup: Schema.Struct({
    env: Schema.String,
    rest: Schema.String,
    mcp: Schema.Struct({
      url: Schema.String,
      headers: Schema.Struct({ Authorization: Schema.String })
    })
  }),
  note: Schema.String,
  docs: Schema.String
}).annotate({ identifier: "TrialKey" })

export const UsageDay = Schema.Struct({ day: Schema.String, credits: Schema.Int, calls: Schema.Int })

export const Usage = Schema.Struct({
  account_id: Schema.String,
  plan: Schema.String,
  state: Schema.String,
  key_hint: Schema.String,
  claimed: Schema.Boolean,
  platforms: Schema.Array(Schema.String),
  free_tier: Schema.optionalKey(
    Schema.Struct({
      credits_per_ip_day: Schema.Int,
      used_today: Schema.Int,
      remaining_today: Schema.Int,
      ip: Schema.String,
      resets_at: Schema.String,
      freshness: Schema.String,
      first_page_only: Schema.Boolean
    })
  ),
  balance: Schema.optionalKey(Schema.Struct({ grant: Schema.Int, purchased: Schema.Int, total: Schema.Int })),
  credits_remaining: Schema.Int.annotate({
    description:
      "What the account can fund for the next (recent-data) call: free budget left today plus grant plus balance, as the charge reads them (the `Credits-Remaining` header's number)."
  }),
  key_cap_remaining: Schema.optionalKey(
    Schema.Int.annotate({
      description:
        "For a key with a spend cap (or a child of a capped key): what the tightest cap has left in its period (the `Key-Cap-Remaining` header's number). Absent when no cap bounds the key."
    })
  ),
  key: Schema.Struct({
    key_id: Schema.String,
    parent_key_id: Schema.optionalKey(
      Schema.String.annotate({ description: "For a child key: the key that made it and can change its cap." })
    ),
    spend_cap: Schema.optionalKey(
      Schema.Struct({
        credits: Schema.Int,
        period: Schema.Literals(["day", "month", "total"]),
        spent_in_period: Schema.Int,
        remaining: Schema.Int.annotate({
          description:
            "What the next call finds: the tightest of this key's and its parent's caps, as the charge reads it (`key_cap_remaining`)."
        }),
        resets_at: Schema.optionalKey(Schema.String)
      }).annotate({ description: "The calling key's own spend cap, absent for a key without one." })
    )
  }).annotate({ description: "The calling key: its id and its own cap, spend and remainder this period." }),
  today: Schema.Struct({ credits: Schema.Int, calls: Schema.Int }),
  history: Schema.Array(UsageDay),
  rate_limit_per_minute: Schema.Int,
  /** The active subscription, else the latest ended one; absent when the account never subscribed. */
  subscription: Schema.optionalKey(
    Schema.Struct({
      pack: Schema.String,
      rail: Schema.String,
      status: Schema.Literals(["active", "canceled"]),
      current_period_end: Schema.String,
      cancel_at_period_end: Schema.Boolean
    })
  ),
  /** Paid purchases (one-time packs and subscription periods); absent before the first. */
  purchases: Schema.optionalKey(Schema.Struct({ count: Schema.Int, last_purchase_at: Schema.String })),
  /** Automatic top-up (GET /v1/topup has more); absent until it was first armed. */
  topup: Schema.optionalKey(
    Schema.Struct({
      enabled: Schema.Boolean,
      pack: Schema.String,
      below_credits: Schema.Int,
      monthly_max_usd_cents: Schema.Int,
      month_spent_usd_cents: Schema.Int
    })
  ),
  upgrade_url: Schema.String,
  claim_url: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Usage" })

export const ReceiptPage = Schema.Struct({
  receipts: Schema.Array(ReceiptSchema),
  cursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ReceiptPage" })

/** One key's receipts: a parent key or a management token may ask; a child key sees only its own. */
export const ReceiptKeyId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({
  description:
    "Only this key's receipts (a key_id from GET /v1/keys or a receipt). A child key always sees only its own."
})
