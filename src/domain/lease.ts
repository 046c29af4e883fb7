/**
 * Leases of metered calls. A call holds its idempotency claim and its account's in-flight slot
 * for at most a lease; past it the call is taken for dead and fenced off. While it runs, a live
 * call beats every `heartbeatMs`, so a waiting caller can tell a slow holder from a dead one.
 */
export const heartbeatMs = 5_000

/** A holder silent for this long is presumed dead (it missed two heartbeats). */
export const silenceMs = 2 * heartbeatMs

export interface Holder {
  readonly leaseExpiresAt: number
  /** When it last showed life: its start, or its last heartbeat. */
  readonly lastSeenAt: number
}

/**
 * How long a caller blocked by `holder` should wait before retrying: a second while the holder is
 * alive (it will most likely finish soon), the rest of its lease once it has gone silent (nothing
 * can change before then), and at least one second.
 */
export const retryAfterSeconds = (holder: Holder, now: number): number => {
  const alive = now - holder.lastSeenAt < silenceMs
  if (alive || holder.leaseExpiresAt <= now) return 1
  return Math.max(1, Math.ceil((holder.leaseExpiresAt - now) / 1000))
}
