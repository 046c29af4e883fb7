/** The small JSON body the bench's reference servers answer, the same bytes from each. */
export const baselineBody = JSON.stringify({
  schema_version: 2,
  kind: "baseline",
  data: { id: "baseline", name: "A bare node:http server", headline: "The same loopback, the same load" },
  cost: { quoted: 0, charged: 0, refunded: 0 },
  receipt: { id: "rcpt_baseline000000000", replayed: false }
})

/**
 * The servers a run compares the service with, each answering `baselineBody` at `/`: the bare
 * node:http server (the baseline every ratio is over), and one route of Effect's HTTP server built
 * as the service's is (the framework's floor: no case can be cheaper than it).
 */
export const referenceServers = {
  "node:http": "bench/baseline-server.ts",
  "effect/http": "bench/effect-floor-server.ts"
} as const

export type Reference = keyof typeof referenceServers
