import type { KeyRecord } from "../../domain/accounts.ts"

/**
 * Whose receipts a caller reads (the list, one by id, the export): a child key only its own calls'
 * (a sub-agent sees its own spend, not its parent's or its siblings'); any other key or a
 * management token the whole account's, or one key's when it asks (`key_id`). `null`: a child
 * asked for another key's, and there are none it may see.
 */
export const receiptKeyOf = (
  key: Pick<KeyRecord, "id" | "parentKeyId"> | undefined,
  asked?: string | undefined
): string | undefined | null => {
  if (key?.parentKeyId === undefined) return asked
  return asked === undefined || asked === key.id ? key.id : null
}
