import { type CapPeriod, capResetsAtIso } from "../domain/keyLimits.ts"

/**
 * A key's cap refused the call: what is left, and who can lift it, with the route and tool that
 * caller has. A child key's cap (or its parent's, which bounds it too) is raised by the agent
 * holding its parent key; an ordinary key's by the account's owner. Only a day or month cap resets.
 */
export const keyCapMessage = (
  input: { readonly quoted: number; readonly parentKeyId?: string | undefined },
  period: CapPeriod | null,
  left: number,
  baseUrl: string
) => {
  const cap = period ?? "total"
  const wait =
    cap === "total"
      ? ""
      : ` or wait for it to reset at cap_resets_at (this ${cap === "day" ? "UTC day" : "UTC month"}'s end)`
  const who =
    input.parentKeyId === undefined
      ? `The account's owner can raise it: POST /v1/keys/update with a management token (the update_key tool on /mcp), or the Keys page of the dashboard (${baseUrl}/dashboard/keys)`
      : `This is a child key: the agent holding its parent key ${input.parentKeyId} can raise this key's cap (POST /v1/keys/child/update, the update_child_key tool), and the account's owner the parent's (POST /v1/keys/update, or ${baseUrl}/dashboard/keys)`
  return `This call is quoted ${input.quoted} credits and the ${cap} spend cap bounding this key has ${left} left; buying credits does not lift it. ${who}${wait}; then retry with the SAME Idempotency-Key.`
}

/** `cap_resets_at` of a day or month cap (a total cap never resets). */
export const capResetsAt = (period: CapPeriod | null, now: number): { readonly cap_resets_at?: string } => {
  const at = period === null ? undefined : capResetsAtIso(period, now)
  return at === undefined ? {} : { cap_resets_at: at }
}
