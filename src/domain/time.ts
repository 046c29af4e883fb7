/** UTC days as integers since the epoch: the free tier and usage history roll over at 00:00 UTC. */
export const msPerDay = 86_400_000
export const dayOf = (epochMs: number): number => Math.floor(epochMs / msPerDay)
export const dayToIso = (day: number): string => new Date(day * msPerDay).toISOString().slice(0, 10)
export const nextDayStartIso = (epochMs: number): string =>
  new Date((dayOf(epochMs) + 1) * msPerDay).toISOString()
