import type { Account } from "../../../domain/accounts.ts"
import { type CapPeriod, capPeriods } from "../../../domain/keyLimits.ts"
import type { KeyListing } from "../../../services/Keys.ts"
import type { LimitArgs } from "../../common/management.ts"
import { count } from "../checkout/format.ts"
import { html } from "../pages/html.ts"
import type { Form } from "../pages/respond.ts"
import { dateOf } from "./layout.ts"

/**
 * A key's limits as the Keys page shows and edits them: a spend cap and its period, platforms, and
 * whether it may make child keys (a key does not expire: it ends when revoked).
 */

const periodWords: Record<CapPeriod, { readonly spent: string; readonly option: string }> = {
  day: { spent: "today (UTC)", option: "Per UTC day" },
  month: { spent: "this month (UTC)", option: "Per calendar month (UTC)" },
  total: { spent: "in total", option: "In total" }
}

/** "120 of 500 credits spent today (UTC); starts afresh 2026-11-26 00:00 UTC", or "none". */
export const capText = (key: KeyListing) =>
  key.spend_cap_credits === null
    ? "none"
    : `${count(key.spent_in_period ?? 0)} of ${count(key.spend_cap_credits)} credits spent ${periodWords[key.cap_period].spent}${
        key.cap_resets_at === null ? "" : `; starts afresh ${dateOf(key.cap_resets_at)}`
      }`

export const platformsText = (key: KeyListing) =>
  key.platforms === null ? "all of the account's" : key.platforms.join(", ")

export const delegationText = (key: KeyListing) =>
  key.may_delegate ? "yes (an agent with it may make child keys)" : "no"

/**
 * The limit fields of the create and edit forms, filled with `key`'s limits when editing. A form
 * always sends every field: an empty cap is no cap, no platform checked is all of them, an
 * unchecked delegation box is none. A child key's form has no delegation box (it never delegates).
 */
export const limitFields = (account: Account, key?: KeyListing) => {
  const period = key?.cap_period ?? "total"
  return html`<fieldset><legend>Limits</legend>
<label for="spend_cap_credits">Spend cap in credits (empty: no cap)</label><input id="spend_cap_credits" name="spend_cap_credits" type="number" min="1" step="1" inputmode="numeric" autocomplete="off" value="${key?.spend_cap_credits === null || key === undefined ? "" : String(key.spend_cap_credits)}">
<label for="cap_period">Cap period</label><select id="cap_period" name="cap_period">${capPeriods.map(
    (each) =>
      html`<option value="${each}"${each === period ? html` selected` : ""}>${periodWords[each].option}</option>`
  )}</select>
<fieldset><legend>Platforms it may call (none checked: all of the account's)</legend>${account.entitlements.map(
    (platform) =>
      html`<div><input type="checkbox" id="platform-${platform}" name="platform:${platform}" value="on"${
        key?.platforms?.includes(platform) === true ? html` checked` : ""
      }><label for="platform-${platform}" style="display:inline;font-weight:400">${platform}</label></div>`
  )}</fieldset>
${
  key?.parent_key_id != null
    ? ""
    : html`<div><input type="checkbox" id="may_delegate" name="may_delegate" value="on"${
        key?.may_delegate === true ? html` checked` : ""
      }><label for="may_delegate" style="display:inline;font-weight:400">May make child keys for sub-agents (delegate)</label></div>`
}
</fieldset>`
}

/** The form's limits as the management steps take them (`null` clears), or why they cannot be read. */
export const limitArgsOf = (
  form: Form,
  account: Account,
  current?: KeyListing
): { readonly args: LimitArgs & { readonly may_delegate?: boolean } } | { readonly error: string } => {
  const capText = form.get("spend_cap_credits")
  const cap = capText === "" ? null : /^\d{1,12}$/.test(capText) ? Number(capText) : Number.NaN
  if (cap !== null && !(cap >= 1))
    return { error: "The spend cap is a whole number of credits, 1 or more; leave it empty for no cap." }
  const period = form.get("cap_period")
  const chosen = account.entitlements.filter((platform) => form.get(`platform:${platform}`) === "on")
  return {
    args: {
      spend_cap_credits: cap,
      cap_period: (capPeriods as ReadonlyArray<string>).includes(period) ? (period as CapPeriod) : "total",
      platforms: chosen.length === 0 || chosen.length === account.entitlements.length ? null : chosen,
      // A child's form has no box: its delegation stays (none).
      ...(current?.parent_key_id != null ? {} : { may_delegate: form.get("may_delegate") === "on" })
    }
  }
}
