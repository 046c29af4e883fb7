import { Schema } from "effect"
import { capPeriods } from "../domain/keyLimits.ts"
import * as Row from "../store/rows.ts"
import { CallRow } from "./receipt.ts"

/** What the reservation functions (`svc_reserve`, `svc_settle`, the caps' and the sweep's) answer, decoded. */
export const decodeReserved = Row.decoder(
  Schema.Struct({
    outcome: Schema.Literals([
      "reserved",
      "account",
      "expired",
      "busy",
      "key_cap",
      "credits",
      "budget",
      "trial_cap"
    ]),
    free_left: Row.NullableInt,
    available: Row.NullableInt,
    holder_lease: Row.NullableInt,
    holder_seen: Row.NullableInt,
    cap_left: Row.NullableInt,
    cap_period: Schema.NullOr(Schema.Literals(capPeriods)),
    reserved_free: Row.NullableInt,
    reserved_grant: Row.NullableInt,
    reserved_balance: Row.NullableInt
  }),
  "svc_reserve"
)
export const decodeSettled = Row.decoder(
  Schema.Struct({
    call: CallRow,
    alert_email: Schema.NullOr(Schema.String),
    alert_threshold: Row.NullableInt,
    alert_spendable: Row.NullableInt,
    spendable: Row.NullableInt,
    cap_left: Row.NullableInt,
    topup_id: Schema.NullOr(Schema.String)
  }),
  "svc_settle"
)
export const decodeCapReached = Row.decoder(
  Schema.Struct({
    key_id: Schema.String,
    period: Schema.String,
    spend_cap_credits: Row.Int,
    account_id: Schema.String
  }),
  "key_cap_events"
)
export const decodeCallIds = Row.decoder(Schema.Struct({ id: Schema.String }), "calls.id")
