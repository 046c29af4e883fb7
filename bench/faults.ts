import { setTimeout as sleep } from "node:timers/promises"
import type { FaultsPatch } from "../src/contract/faults.ts"
import type { Service } from "./service.ts"

export interface Faults {
  readonly stop: () => Promise<void>
  readonly report: () => ReadonlyArray<string>
}

const calm: typeof FaultsPatch.Type = {
  errorRate: 0,
  outage: false,
  latencyMs: { min: 0, max: 0 },
  paused: []
}

const storms: ReadonlyArray<readonly [string, typeof FaultsPatch.Type]> = [
  ["error rate 30%", { errorRate: 0.3 }],
  ["latency 20-200 ms", { latencyMs: { min: 20, max: 200 } }],
  ["outage", { outage: true }],
  ["forum paused", { paused: ["forum"] }],
  ["live fetching paused by the operator", {}]
]

/**
 * Every 6 seconds, 2 seconds of trouble, in turn: one of the simulated world's fault knobs
 * (operator RPC `upstream`) or the operator's `live --pause` (operator RPC `live`).
 */
export const startFaults = (options: {
  readonly service: Service
  readonly log: (line: string) => void
}): Faults => {
  const { service, log } = options
  const counts = new Map<string, number>()
  let running = true
  const loop = (async () => {
    for (let round = 0; running; round++) {
      for (let t = 0; t < 40 && running; t++) await sleep(100)
      if (!running) break
      const [name, patch] = storms[round % storms.length]!
      log(`soak: ${name}`)
      counts.set(name, (counts.get(name) ?? 0) + 1)
      if (Object.keys(patch).length === 0) await service.admin.livePaused(true)
      else await service.admin.faults(patch)
      await sleep(2000)
      if (Object.keys(patch).length === 0) await service.admin.livePaused(false)
      else await service.admin.faults(calm)
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
    },
    report: () => [
      "2 s each, through the operator RPC (`upstream` for the world's knobs, `live` for the pause):",
      ...[...counts.entries()].map(([name, n]) => `  ${name}: ${n} times`)
    ]
  }
}
