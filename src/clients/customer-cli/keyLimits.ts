import { Effect, Option } from "effect"
import { Flag } from "effect/cli"
import { type CapPeriod, capPeriods } from "../../domain/keyLimits.ts"
import { platforms as allPlatforms, type Platform } from "../../domain/plans.ts"
import { dim } from "./output.ts"
import { UsageError } from "./session.ts"

/** `--cap`, `--period`, `--platforms`: a key's limits as flags (a spend key does not expire: revoke it). */
export const limitFlags = {
  cap: Flag.String("cap").pipe(
    Flag.withDescription(
      "The most credits the key may spend per period (an integer, 1 or more); `none` for no cap."
    ),
    Flag.optional
  ),
  period: Flag.String("period").pipe(
    Flag.withDescription("The cap's period: day (UTC), month (UTC calendar month) or total (default)."),
    Flag.optional
  ),
  platforms: Flag.String("platforms").pipe(
    Flag.withDescription(
      `The platforms the key may call, comma separated (${allPlatforms.join(",")}); \`all\` for every one.`
    ),
    Flag.optional
  )
}

/** `--may-delegate` / `--no-may-delegate`: the owner's grant of making child keys (default: none). */
export const delegationFlag = {
  mayDelegate: Flag.Boolean("may-delegate").pipe(
    Flag.withDescription(
      "Let the key make child keys for sub-agents (`svc keys child ...`); --no-may-delegate takes it back."
    ),
    Flag.optional
  )
}

export interface LimitFlagValues {
  readonly cap: Option.Option<string>
  readonly period: Option.Option<string>
  readonly platforms: Option.Option<string>
}

/** The request fields the flags ask for: absent flags stay absent, `none` / `all` clear. */
export interface LimitFields {
  spend_cap_credits?: number | null
  cap_period?: CapPeriod
  platforms?: ReadonlyArray<Platform> | null
}

const fail = (message: string) => Effect.fail(new UsageError({ message }))

const capOf = (text: string) => {
  if (text === "none") return Effect.succeed(null)
  return /^\d+$/.test(text) && Number(text) >= 1 && Number.isSafeInteger(Number(text))
    ? Effect.succeed(Number(text))
    : fail(`--cap takes a whole number of credits, 1 or more (or \`none\`); got "${text}".`)
}

const periodOf = (text: string) =>
  (capPeriods as ReadonlyArray<string>).includes(text)
    ? Effect.succeed(text as CapPeriod)
    : fail(`--period is one of ${capPeriods.join(", ")}; got "${text}".`)

const platformsOf = (text: string) => {
  if (text === "all") return Effect.succeed(null)
  const named = text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
  const unknown = named.filter((name) => !(allPlatforms as ReadonlyArray<string>).includes(name))
  if (named.length === 0 || unknown.length > 0)
    return fail(
      `--platforms takes platforms separated by commas, among ${allPlatforms.join(", ")} (or \`all\`); ${
        unknown.length > 0 ? `unknown: ${unknown.join(", ")}` : "none given"
      }.`
    )
  return Effect.succeed([...new Set(named)] as ReadonlyArray<Platform>)
}

/** The flags as request fields, or a usage error naming the flag at fault (exit 2). */
export const limitFieldsOf = (values: LimitFlagValues): Effect.Effect<LimitFields, UsageError> =>
  Effect.gen(function* () {
    const fields: LimitFields = {}
    if (Option.isSome(values.cap)) fields.spend_cap_credits = yield* capOf(values.cap.value)
    if (Option.isSome(values.period)) fields.cap_period = yield* periodOf(values.period.value)
    if (Option.isSome(values.platforms)) fields.platforms = yield* platformsOf(values.platforms.value)
    return fields
  })

/** A new key's fields: no flag clears on a key that has nothing yet, so `none` and `all` just leave it out. */
export const newKeyFields = (fields: LimitFields): LimitFields =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null)) as LimitFields

export interface ListedKey {
  readonly key_id: string
  readonly label: string | null
  readonly hint: string
  readonly revoked_at: string | null
  readonly parent_key_id: string | null
  readonly spend_cap_credits: number | null
  readonly cap_period: CapPeriod
  readonly spent_in_period: number | null
  readonly cap_resets_at: string | null
  readonly may_delegate: boolean
  readonly platforms: ReadonlyArray<string> | null
  readonly last_used_at: string | null
}

const day = (iso: string) => iso.replace(/:\d\d(\.\d+)?Z$/, "Z").replace("T", " ")

/** A key's limits in a few words: `12/500 credits today (resets 2026-11-26 00:00Z) · forum · may delegate`. */
export const limitsText = (key: ListedKey) => {
  const parts: Array<string> = []
  if (key.spend_cap_credits === null) parts.push("no cap")
  else {
    const per = key.cap_period === "day" ? "today" : key.cap_period === "month" ? "this month" : "in total"
    parts.push(
      `${key.spent_in_period ?? 0}/${key.spend_cap_credits} credits ${per}${
        key.cap_resets_at === null ? "" : ` (resets ${day(key.cap_resets_at)})`
      }`
    )
  }
  parts.push(key.platforms === null ? "all platforms" : key.platforms.join(","))
  if (key.may_delegate) parts.push("may delegate")
  return parts.join(" · ")
}

const keyLine = (key: ListedKey, first: string, rest: string) =>
  `${first}${key.key_id}  ${key.hint}  ${key.label ?? dim("(no label)")}${
    key.revoked_at === null ? "" : `  ${dim(`revoked ${day(key.revoked_at)}`)}`
  }\n${rest}  ${dim(limitsText(key))}`

/** The keys, each child key indented under its parent (a child whose parent is not listed stands alone). */
export const keyTree = (keys: ReadonlyArray<ListedKey>): string => {
  if (keys.length === 0) return dim("(no keys)")
  const ids = new Set(keys.map((key) => key.key_id))
  const childrenOf = (id: string) => keys.filter((key) => key.parent_key_id === id)
  return keys
    .filter((key) => key.parent_key_id === null || !ids.has(key.parent_key_id))
    .map((key) =>
      [
        keyLine(key, "", ""),
        ...childrenOf(key.key_id).map((child) => keyLine(child, "  └ child ", "          "))
      ].join("\n")
    )
    .join("\n")
}
