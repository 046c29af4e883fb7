import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runLoad } from "../../bench/load.ts"

/**
 * The bench's fixed-rate row claims an open loop: requests evenly spaced at the rate asked for
 * (not each second's in one burst, as autocannon's rate sends them), each timed from when it was
 * due, so a stall shows in the latency of every request it held up.
 */
describe("the bench's fixed-rate load generator", () => {
  it.effect(
    "sends at an even rate, and a stall counts for the requests it held up",
    () =>
      Effect.promise(async () => {
        const arrivals: Array<number> = []
        let stallNext = false
        const server = createServer((request, response) => {
          arrivals.push(performance.now())
          const answer = () => response.writeHead(200, { "content-type": "application/json" }).end("{}")
          if (request.url === "/stall" && stallNext) {
            stallNext = false
            setTimeout(answer, 400)
          } else answer()
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        try {
          const even = await runLoad({
            label: "rate-test-even",
            baseUrl,
            method: "GET",
            entries: [{ path: "/even", headers: {} }],
            duration: 2,
            connections: 10,
            tool: "wrk",
            countStatuses: true,
            rate: 200
          })
          assert.strictEqual(even.tool, "fixed rate")
          assert.strictEqual(even.statuses["200"], 400)
          // The runner reports its own lateness, which is in every latency it measures.
          assert.isDefined(even.runnerDelay)
          assert.isAtMost(even.runnerDelay?.p99Ms ?? Number.NaN, even.runnerDelay?.maxMs ?? Number.NaN)
          // Evenly spaced: 20 requests per 100 ms. A burst per second would put 200 in one window; a
          // loaded machine may bunch a few windows' worth, never a second's.
          const first = arrivals[0]!
          const windows = new Map<number, number>()
          for (const at of arrivals) {
            const window = Math.floor((at - first) / 100)
            windows.set(window, (windows.get(window) ?? 0) + 1)
          }
          assert.isAtMost(Math.max(...windows.values()), 100, JSON.stringify([...windows]))
          assert.isAtLeast(windows.size, 18)

          // One connection and one 400 ms stall: the requests due behind it wait, and say so.
          stallNext = true
          const stalled = await runLoad({
            label: "rate-test-stall",
            baseUrl,
            method: "GET",
            entries: [{ path: "/stall", headers: {} }],
            duration: 2,
            connections: 1,
            tool: "wrk",
            countStatuses: true,
            rate: 100
          })
          assert.strictEqual(stalled.statuses["200"], 200)
          // 40 requests fell due during the stall: with their waits counted, p99 is far above the
          // sub-millisecond answer (a closed loop would report one slow request out of 200).
          assert.isAbove(stalled.p99Ms, 100)
          assert.isAtLeast(stalled.maxMs, 390)
        } finally {
          server.close()
        }
      }),
    60_000
  )

  it.effect(
    "reads chunked answers, trailers and closed connections, and sends a POST's body",
    () =>
      Effect.promise(async () => {
        let n = 0
        const bodies = new Set<string>()
        const server = createServer((request, response) => {
          let body = ""
          request.setEncoding("utf8")
          request.on("data", (chunk: string) => {
            body += chunk
          })
          request.on("end", () => {
            bodies.add(body)
            n += 1
            if (n % 3 === 0) {
              // Chunked, with a trailer.
              response.writeHead(200, { "content-type": "text/plain", trailer: "x-done" })
              response.write("first ")
              response.addTrailers({ "x-done": "yes" })
              response.end("last")
            } else if (n % 3 === 1) {
              // Chunked, its last chunk a moment later.
              response.writeHead(201)
              response.write("hello ")
              setTimeout(() => response.end("world"), 2)
            } else {
              // Content-Length, then the server closes the connection.
              response.writeHead(202, { connection: "close", "content-length": "2" }).end("ok")
            }
          })
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        try {
          const load = await runLoad({
            label: "rate-test-framing",
            baseUrl,
            method: "POST",
            entries: [
              { path: "/framing", headers: { "content-type": "application/json" }, body: '{"n":{{IDEM}}}' }
            ],
            duration: 1,
            connections: 4,
            tool: "wrk",
            countStatuses: true,
            rate: 300
          })
          assert.strictEqual(load.socketErrors, 0)
          assert.deepStrictEqual(load.statuses, { "200": 100, "201": 100, "202": 100 })
          // Every body arrived whole, each with its own key.
          assert.strictEqual(bodies.size, 300)
          for (const body of bodies) assert.match(body, /^\{"n":ld-\d+-\d+\}$/)
        } finally {
          server.close()
        }
      }),
    60_000
  )

  it.effect(
    "with a warm-up, sends that many seconds more at the rate first and measures only what follows",
    () =>
      Effect.promise(async () => {
        let received = 0
        const server = createServer((_request, response) => {
          received += 1
          const answer = () => response.writeHead(200, { "content-type": "application/json" }).end("{}")
          // The first request (in the warm-up) stalls 400 ms, holding up the ones due behind it.
          if (received === 1) setTimeout(answer, 400)
          else answer()
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        try {
          const warmed = await runLoad({
            label: "rate-test-warm-up",
            baseUrl,
            method: "GET",
            entries: [{ path: "/warm", headers: {} }],
            duration: 2,
            connections: 1,
            tool: "wrk",
            countStatuses: true,
            rate: 100,
            warmup: 1
          })
          assert.strictEqual(received, 300, "one second of warm-up and two measured, at 100 a second")
          assert.strictEqual(warmed.statuses["200"], 200, "only the measured requests are counted")
          assert.strictEqual(warmed.requests, 200)
          // The stall and the 40 requests it held up fell in the warm-up.
          assert.isBelow(warmed.maxMs, 390)
          assert.isAtLeast(warmed.seconds, 1.9)
          assert.isBelow(warmed.seconds, 2.9)
        } finally {
          server.close()
        }
      }),
    60_000
  )
})
