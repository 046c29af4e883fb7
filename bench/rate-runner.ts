// The load generator of a fixed-rate row: requests sent on a schedule, not as fast as answered
// (an open loop, as wrk2 does). Request i is due at start + i / rate; it goes out on a free
// keep-alive connection (at most `connections`) as soon as it is due, and its latency counts from
// when it was due, so a stall counts for every request it held up (no coordinated omission).
// Prints the same `BENCH_JSON` line as the other runners.
import { Agent, request } from "node:http"
import { entryFor, type RunnerSpec, readEntries } from "./entries.ts"
import type { RawResult } from "./load.ts"

const spec = JSON.parse(process.argv[2] ?? "{}") as RunnerSpec & { readonly rate: number }
const entries = readEntries(spec.file)
const agent = new Agent({ keepAlive: true, maxSockets: spec.connections })
const total = Math.round(spec.rate * spec.duration)
const latencies = new Float64Array(total)
const statuses: Record<string, number> = {}
let answered = 0
let failed = 0
let sent = 0

const send = (n: number, due: number) =>
  new Promise<void>((resolve) => {
    const entry = entryFor(entries, n)
    const done = (status: string) => {
      latencies[answered++] = performance.now() - due
      statuses[status] = (statuses[status] ?? 0) + 1
      resolve()
    }
    const outgoing = request(
      `${spec.url}${entry.path}`,
      { method: spec.method, agent, headers: entry.headers, timeout: 10_000 },
      (response) => {
        response.on("data", () => {})
        response.on("end", () => done(String(response.statusCode)))
        response.on("error", () => {
          failed += 1
          resolve()
        })
      }
    )
    outgoing.on("timeout", () => outgoing.destroy(new Error("timeout")))
    outgoing.on("error", () => {
      failed += 1
      resolve()
    })
    outgoing.end(entry.body.length > 0 ? entry.body : undefined)
  })

const start = performance.now()
const inFlight: Array<Promise<void>> = []
await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now()
    while (sent < total) {
      const due = start + (sent * 1000) / spec.rate
      if (due > now) break
      inFlight.push(send(sent, due))
      sent += 1
    }
    if (sent < total) setTimeout(tick, 0)
    else resolve()
  }
  tick()
})
await Promise.all(inFlight)
const seconds = (performance.now() - start) / 1000
agent.destroy()

const sorted = latencies.slice(0, answered).sort()
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const raw: RawResult = {
  requests: answered,
  duration_us: seconds * 1e6,
  errors: { connect: failed },
  latency_us: { p50: at(0.5) * 1000, p99: at(0.99) * 1000, max: (sorted.at(-1) ?? 0) * 1000 },
  statuses
}
process.stdout.write(`BENCH_JSON ${JSON.stringify(raw)}\n`)
