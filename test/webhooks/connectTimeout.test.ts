import { spawn } from "node:child_process"
import { connect } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { pinnedRequest } from "../../src/oauth/clientFetch.ts"

/**
 * A listener that completes no more handshakes: a child process listening with a backlog of one,
 * stopped (SIGSTOP) so it never accepts, its queued places (two) taken by first connections. A
 * further connection waits for a SYN-ACK that never comes, as to an address that drops packets.
 */
const silentAddress = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ port: number; stop: () => void }>((resolve, reject) => {
        const child = spawn(process.execPath, [
          "-e",
          "require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () { console.log(this.address().port) })"
        ])
        child.once("error", reject)
        child.stdout.once("data", (chunk: Buffer) => {
          const port = Number(chunk.toString().trim())
          child.kill("SIGSTOP")
          const fillers = [connect(port, "127.0.0.1"), connect(port, "127.0.0.1")]
          for (const filler of fillers) filler.on("error", () => {})
          fillers[1]!.once("connect", () =>
            resolve({
              port,
              stop: () => {
                for (const filler of fillers) filler.destroy()
                child.kill("SIGKILL")
              }
            })
          )
        })
      })
  ),
  (silent) => Effect.sync(silent.stop)
)

/** Audit 2: an attempt waited its whole timeout (10 s) on an address that never answers. */
describe("a webhook attempt's connection", () => {
  it.effect("gives up after the connect timeout, well before the attempt's own", () =>
    Effect.gen(function* () {
      const { port } = yield* silentAddress
      const started = Date.now()
      const failed = yield* Effect.flip(
        pinnedRequest(
          `http://127.0.0.1:${port}/hook`,
          { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
          { allowPrivate: true, allowHttp: true, timeoutMs: 5_000, connectTimeoutMs: 300, maxBytes: 1024 }
        )
      )
      const took = Date.now() - started
      assert.include(failed.message, "did not accept a connection within 300 ms")
      assert.isBelow(took, 2_000)
      assert.isAtLeast(took, 250)
    }).pipe(Effect.scoped)
  )
})
