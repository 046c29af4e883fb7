import { hash } from "node:crypto"

/** Canonical JSON: keys sorted, undefined dropped, so equal arguments always give equal fingerprints. */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
}

// One-shot `hash` rather than `createHash(...).update().digest()`: no Hash object per call (half the time).
export const fingerprint = (accountId: string, operation: string, args: unknown): string =>
  hash("sha256", `${accountId}\n${operation}\n${canonicalJson(args)}`, "hex")
