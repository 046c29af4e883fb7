// The load generator when wrk is missing: autocannon, rotating over the same prepared requests as
// bench/wrk/rotate.lua and printing the same `BENCH_JSON` line. It saturates sooner than wrk.
import autocannon from "autocannon"
import { entryFor, type RunnerSpec, readEntries } from "./entries.ts"
import type { RawResult } from "./load.ts"

const spec = JSON.parse(process.argv[2] ?? "{}") as RunnerSpec
const entries = readEntries(spec.file)

let counter = 0
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.duration,
  method: spec.method,
  requests: [
    {
      setupRequest: (request) => {
        counter += 1
        const { path, headers, body } = entryFor(entries, counter)
        return {
          ...request,
          method: spec.method,
          path,
          headers,
          ...(body.length > 0 ? { body } : {})
        }
      }
    }
  ]
})

const raw: RawResult = {
  requests: result.requests.total,
  duration_us: result.duration * 1e6,
  errors: { connect: result.errors - result.timeouts, timeout: result.timeouts },
  latency_us: {
    p50: result.latency.p50 * 1000,
    p99: result.latency.p99 * 1000,
    max: result.latency.max * 1000
  },
  statuses: Object.fromEntries(
    Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count])
  )
}
process.stdout.write(`BENCH_JSON ${JSON.stringify(raw)}\n`)
