import { hash } from "node:crypto"

/**
 * Canonical JSON: keys sorted (by UTF-16 code units, as `<` compares strings), undefined dropped, so
 * equal arguments always give equal fingerprints. Built in one pass over the sorted keys (every
 * metered call with an Idempotency-Key makes one: no entry pairs, no filtered copies).
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) out += (i === 0 ? "" : ",") + canonicalJson(value[i])
    return `${out}]`
  }
  const record = value as Record<string, unknown>
  let out = "{"
  for (const key of sortedKeys(record)) {
    const field = record[key]
    if (field === undefined) continue
    out += `${out.length === 1 ? "" : ","}${JSON.stringify(key)}:${canonicalJson(field)}`
  }
  return `${out}}`
}

/** An object's keys in order: a few (every parameter object) by insertion in place, which allocates nothing more. */
const sortedKeys = (record: Record<string, unknown>): Array<string> => {
  const keys = Object.keys(record)
  if (keys.length > 16) return keys.sort()
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!
    let j = i - 1
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!
      j--
    }
    keys[j + 1] = key
  }
  return keys
}

// One-shot `hash` rather than `createHash(...).update().digest()`: no Hash object per call (half the time).
export const fingerprint = (accountId: string, operation: string, args: unknown): string =>
  hash("sha256", `${accountId}\n${operation}\n${canonicalJson(args)}`, "hex")
