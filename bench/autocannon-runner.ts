// The load generator when wrk is missing: autocannon, rotating over the same prepared requests as
// bench/wrk/rotate.lua and printing the same `BENCH_JSON` line. It saturates sooner than wrk.
import { randomInt } from "node:crypto"
import { readFileSync } from "node:fs"
import autocannon from "autocannon"
import type { RawResult } from "./load.ts"

interface Spec {
  readonly url: string
  readonly method: "GET" | "POST"
  readonly file: string
  readonly duration: number
  readonly connections: number
  /** Requests per second over all connections (autocannon corrects for coordinated omission). */
  readonly rate?: number
}

const spec = JSON.parse(process.argv[2] ?? "{}") as Spec
const entries = readFileSync(spec.file, "utf8")
  .split("\n")
  .filter((line) => line.length > 0)
  .map((line) => {
    const [path = "/", headerText = "", body = ""] = line.split("\t")
    const headers = Object.fromEntries(
      headerText
        .split("\x1e")
        .filter((pair) => pair.length > 0)
        .map((pair) => {
          const at = pair.indexOf(":")
          return [pair.slice(0, at), pair.slice(at + 1).trim()]
        })
    )
    return { path, headers, body }
  })

let counter = 0
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.duration,
  ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
  method: spec.method,
  requests: [
    {
      setupRequest: (request) => {
        counter += 1
        const entry = entries[counter % entries.length]!
        const idem = `ac-${counter}-${randomInt(1_000_000_000)}`
        const headers = Object.fromEntries(
          Object.entries(entry.headers).map(([name, value]) => [name, value.replaceAll("{{IDEM}}", idem)])
        )
        const body = entry.body.replaceAll("{{IDEM}}", idem)
        return {
          ...request,
          method: spec.method,
          path: entry.path,
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
