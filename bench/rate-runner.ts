// The fixed-rate load of the half-rate row: an open loop as wrk2 is. Request i is due at
// start + i / rate and goes out on a free keep-alive connection (at most `connections`) as soon as
// it is due; its latency counts from when it was due, so a stall counts for every request it held
// up (no coordinated omission). Written on plain sockets with a small HTTP/1.1 reader rather than
// node:http's client: this process's own time is in every latency it reports, and the client's
// parser, agent and objects cost it more than the server under test spends on a simple answer
// (docs/performance.md, round 10). With `warmup` it first sends the same load for that many seconds
// on the same connections, not measured, so that neither its connections' set-up nor the service's
// first moments after an idle second count (pgbench leaves its connections' set-up out the same way).
import { connect, type Socket } from "node:net"
import { entryFor, type RunnerSpec, readEntries } from "./entries.ts"
import type { RawResult } from "./load.ts"
import { watchLoopDelay } from "./loopDelay.ts"

const spec = JSON.parse(process.argv[2] ?? "{}") as RunnerSpec & {
  readonly rate: number
  readonly warmup?: number
}
const target = new URL(spec.url)
const port = Number(target.port || 80)
const entries = readEntries(spec.file)
/** Requests of the warm-up, sent first and not measured. */
const warm = Math.round(spec.rate * (spec.warmup ?? 0))
const total = warm + Math.round(spec.rate * spec.duration)
const latencies = new Float64Array(total - warm)
const statuses: Record<string, number> = {}
const timeoutMs = 10_000
/** Requests answered and failed, of all; of the measured ones, `measured` and `failed`. */
let answered = 0
let measured = 0
let failed = 0
let next = 0

const requestOf = (n: number): Buffer => {
  const entry = entryFor(entries, n)
  let head = `${spec.method} ${entry.path} HTTP/1.1\r\nHost: ${target.host}\r\n`
  for (const [name, value] of Object.entries(entry.headers)) head += `${name}: ${value}\r\n`
  if (entry.body.length > 0 || spec.method === "POST")
    head += `Content-Length: ${Buffer.byteLength(entry.body)}\r\n`
  return Buffer.from(`${head}\r\n${entry.body}`)
}

const headEnd = Buffer.from("\r\n\r\n")
const lineEnd = Buffer.from("\r\n")

/**
 * The status of the response at the start of `data`, and whether the server closes the connection
 * after it; undefined while it is incomplete. Bodies are delimited by Content-Length or chunked
 * encoding (RFC 9112 6.3); one request at a time per connection, so nothing follows the answer.
 */
const answerIn = (data: Buffer): { readonly status: string; readonly close: boolean } | undefined => {
  const head = data.indexOf(headEnd)
  if (head === -1) return undefined
  const text = data.toString("latin1", 0, head).toLowerCase()
  const answer = { status: text.slice(9, 12), close: /\r\nconnection:\s*close/.test(text) }
  const length = /\r\ncontent-length:\s*(\d+)/.exec(text)
  if (length !== null) return data.length >= head + 4 + Number(length[1]) ? answer : undefined
  if (!/\r\ntransfer-encoding:[^\r]*chunked/.test(text)) return answer
  let at = head + 4
  for (;;) {
    const sizeEnd = data.indexOf(lineEnd, at)
    if (sizeEnd === -1) return undefined
    const size = Number.parseInt(data.toString("latin1", at, sizeEnd), 16)
    // Not a chunk size: counted as an answer of status 000, and the connection dropped.
    if (Number.isNaN(size)) return { status: "000", close: true }
    // The last chunk's line, then trailers (usually none), then an empty line.
    if (size === 0) return data.indexOf(headEnd, sizeEnd) === -1 ? undefined : answer
    at = sizeEnd + 2 + size + 2
    if (data.length < at) return undefined
  }
}

interface Connection {
  readonly socket: Socket
  pending: Buffer | undefined
  due: number
  /** The request it carries (its number), while busy. */
  n: number
  busy: boolean
}

const all = new Set<Connection>()
const free: Array<Connection> = []

const settle = (connection: Connection, status: string | undefined) => {
  if (!connection.busy) return
  connection.busy = false
  answered += 1
  if (connection.n < warm) return
  if (status === undefined) failed += 1
  else {
    latencies[measured++] = performance.now() - connection.due
    statuses[status] = (statuses[status] ?? 0) + 1
  }
}

const open = (): Connection => {
  const socket = connect({ host: target.hostname, port, noDelay: true })
  const connection: Connection = { socket, pending: undefined, due: 0, n: 0, busy: false }
  all.add(connection)
  socket.on("data", (chunk: Buffer) => {
    const data = connection.pending === undefined ? chunk : Buffer.concat([connection.pending, chunk])
    const done = answerIn(data)
    if (done === undefined) {
      connection.pending = data
      return
    }
    connection.pending = undefined
    settle(connection, done.status)
    if (done.close) socket.destroy()
    else free.push(connection)
    pump()
  })
  const lost = () => {
    if (!all.delete(connection)) return
    settle(connection, undefined)
    const at = free.indexOf(connection)
    if (at !== -1) free.splice(at, 1)
    pump()
  }
  socket.on("error", lost)
  socket.on("close", lost)
  return connection
}

// This process's own lateness: a late turn is in the latency of every request it held up.
const loopDelay = watchLoopDelay()
const start = performance.now()
const dueOf = (n: number) => start + (n * 1000) / spec.rate

/** Sends every request that is due on a free connection, opening one while fewer than allowed are. */
const pump = () => {
  const now = performance.now()
  while (next < total && dueOf(next) <= now) {
    const connection = free.pop() ?? (all.size < spec.connections ? open() : undefined)
    if (connection === undefined) break
    connection.busy = true
    connection.due = dueOf(next)
    connection.n = next
    connection.socket.write(requestOf(next))
    next += 1
  }
}

await new Promise<void>((resolve) => {
  const tick = () => {
    pump()
    if (answered >= total) {
      resolve()
      return
    }
    // A request still unanswered long after it was due has timed out: its connection is dropped.
    const now = performance.now()
    for (const connection of all)
      if (connection.busy && now - connection.due > timeoutMs) connection.socket.destroy()
    setTimeout(tick, next < total ? Math.max(0, dueOf(next) - now) : 5)
  }
  tick()
})
// The measured requests were due from the warm-up's end.
const seconds = (performance.now() - dueOf(warm)) / 1000
const runnerDelay = loopDelay()
for (const connection of all) connection.socket.destroy()

const sorted = latencies.slice(0, measured).sort()
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const raw: RawResult = {
  requests: measured,
  duration_us: seconds * 1e6,
  errors: { connect: failed },
  latency_us: { p50: at(0.5) * 1000, p99: at(0.99) * 1000, max: (sorted.at(-1) ?? 0) * 1000 },
  statuses,
  runner_delay: runnerDelay
}
process.stdout.write(`BENCH_JSON ${JSON.stringify(raw)}\n`)
