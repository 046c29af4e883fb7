/** What a call asks for (`recent`: a cached copy up to the configured age; `realtime`: a live fetch) and what it got. */
export type Freshness = "recent" | "realtime"
export type Served = "recent" | "realtime" | "cached_fallback"
