import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { warmUp } from "../../bench/cases.ts"
import { defaultWarmup, parseOptions } from "../../bench/options.ts"

/**
 * Each case is measured after the same load, unmeasured, for `--warmup` seconds (a service just set
 * up runs a case's path cold: its code not yet optimised, PGlite's WebAssembly not yet tiered up).
 */
describe("the bench's warm-up", () => {
  it("is 8 s unless --warmup says otherwise, and 0 turns it off", () => {
    const warmupOf = (argv: ReadonlyArray<string>) => {
      const options = parseOptions(argv)
      return options === "help" ? undefined : options.warmup
    }
    assert.strictEqual(defaultWarmup, 8)
    assert.strictEqual(warmupOf([]), defaultWarmup)
    assert.strictEqual(warmupOf(["--warmup", "7"]), 7)
    assert.strictEqual(warmupOf(["--warmup", "0"]), 0)
    assert.throws(() => parseOptions(["--warmup=-1"]), /--warmup must be a positive integer/)
    assert.throws(() => parseOptions(["--warmup", "1.5"]), /--warmup must be a positive integer/)
  })

  it.effect(
    "sends the case's requests for the seconds asked, and none for 0",
    () =>
      Effect.promise(async () => {
        const paths: Array<string> = []
        const server = createServer((request, response) => {
          paths.push(request.url ?? "")
          response.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        const options = parseOptions(["--connections", "4"])
        if (options === "help") throw new Error("no options")
        const testCase = { method: "GET" as const, entries: [{ path: "/case", headers: {} }] }
        try {
          const none = await warmUp({ url }, "warm-test-none", testCase, 0, options, "autocannon")
          assert.isUndefined(none)
          assert.strictEqual(paths.length, 0)
          const started = performance.now()
          const warm = await warmUp({ url }, "warm-test", testCase, 1, options, "autocannon")
          assert.isAtLeast(performance.now() - started, 900)
          assert.isDefined(warm)
          assert.isAbove(warm?.rps ?? 0, 0)
          assert.isAbove(paths.length, 0)
          assert.isTrue(paths.every((path) => path === "/case"))
          // The unavailable case (MCP not mounted) has nothing to warm.
          const unavailable = await warmUp(
            { url },
            "warm-test-unavailable",
            { method: "POST", entries: { unavailable: "no /mcp" } },
            1,
            options,
            "autocannon"
          )
          assert.isUndefined(unavailable)
        } finally {
          await new Promise((resolve) => server.close(resolve))
        }
      }),
    30_000
  )
})
