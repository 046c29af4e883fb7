import { get } from "node:http"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { dayOf, dayToIso } from "../../src/domain/time.ts"
import { buy } from "../billing/support.ts"
import { signIn, spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const today = () => dayToIso(dayOf(Date.now()))

const megabyte = 1024 * 1024

/** An export read as a client would, as text. */
const exported = (app: TestApp["Service"], query: string, bearer: string | undefined, ip: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${app.url}/v1/receipts/export?${query}`, {
      headers: {
        ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
        "x-forwarded-for": ip
      }
    })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** V8's full collection, for measuring what is live rather than what is live and not yet collected. */
const collect: () => void = (() => {
  setFlagsFromString("--expose-gc")
  return runInNewContext("gc")
})()

/**
 * An export read as a stream, counting lines and bytes without keeping them: what the service holds
 * while it streams. After every megabyte received the reading pauses (so the service, held back by
 * the socket, stops where it is), a full collection runs, and what is still in use is read (V8's
 * heap and the buffers outside it): the growth is what was live at the worst of those moments, not
 * garbage waiting for a collection (a sampled `heapUsed` counted that, and its peak moved between 9
 * and 73 MB from run to run of the same code, failing two runs in three on one machine). RSS is
 * sampled every 10 ms for the log line. A connection of its own (no pooled connection left idle
 * while PGlite held the thread).
 */
const streamed = (app: TestApp["Service"], query: string, bearer: string, ip: string) =>
  Effect.promise(
    () =>
      new Promise<{
        status: number
        lines: number
        bytes: number
        last: string
        ms: number
        liveGrowthMb: number
        rssGrowthMb: number
        peakLiveMb: number
        peakRssMb: number
      }>((resolve, reject) => {
        collect()
        const before = process.memoryUsage()
        const held = (usage: NodeJS.MemoryUsage) => usage.heapUsed + usage.external
        let peakLive = held(before)
        let peakRss = before.rss
        const sampler = setInterval(() => {
          peakRss = Math.max(peakRss, process.memoryUsage().rss)
        }, 10)
        const started = performance.now()
        const request = get(
          `${app.url}/v1/receipts/export?${query}`,
          { agent: false, headers: { authorization: `Bearer ${bearer}`, "x-forwarded-for": ip } },
          (response) => {
            let lines = 0
            let bytes = 0
            let last = ""
            let nextLook = megabyte
            response.on("data", (chunk: Buffer) => {
              bytes += chunk.length
              for (const byte of chunk) if (byte === 10) lines++
              last = chunk.subarray(Math.max(0, chunk.length - 200)).toString("utf8")
              if (bytes < nextLook) return
              nextLook = bytes + megabyte
              response.pause()
              setImmediate(() => {
                collect()
                peakLive = Math.max(peakLive, held(process.memoryUsage()))
                response.resume()
              })
            })
            response.on("error", reject)
            response.on("end", () => {
              clearInterval(sampler)
              resolve({
                status: response.statusCode ?? 0,
                lines,
                bytes,
                last,
                ms: Math.round(performance.now() - started),
                liveGrowthMb: (peakLive - held(before)) / 1024 / 1024,
                rssGrowthMb: (peakRss - before.rss) / 1024 / 1024,
                peakLiveMb: peakLive / 1024 / 1024,
                peakRssMb: peakRss / 1024 / 1024
              })
            })
          }
        )
        request.on("error", reject)
      })
  )

/** `n` settled receipts for an account, written straight to the ledger (one statement). */
const receiptsFor = (accountId: string, keyId: string, n: number, startAt: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.orDie(
      sql`INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted, reserved_free, reserved_grant,
          reserved_balance, charged, charged_free, charged_grant, charged_balance, refunds, idempotency_key,
          lease_expires_at, created_at, settled_at)
        SELECT 'rcpt_bulk' || lpad(g::text, 7, '0'), ${accountId}, ${keyId}, 'getProfile', 'settled', '10.93.0.1',
          ${dayOf(startAt)}, 4, 0, 0, 4, 4, 0, 0, 4, '[]', 'bulk-' || g, ${startAt} + g, ${startAt} + g, ${startAt} + g
        FROM generate_series(1, ${n}) g`
    )
  })

describe(`receipts export (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 300_000, excludeTestServices: true })((it) => {
    it.effect("CSV and JSON Lines, oldest first, the range's days included, formula cells defused", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.93.1.1"
        const minted = yield* app.mint(ip)
        yield* buy(app, "flex", { key: minted.key, ip })
        const keys = [
          '=HYPERLINK("http://evil.example","x")',
          "+1+1+1+1",
          "-2-2-2-2",
          "@SUM(A1:A9)",
          "plain-key-123",
          'a "quoted", key'
        ]
        for (const idempotencyKey of keys) {
          const reply = yield* spend(app, minted.key, ip, 3, { idempotencyKey })
          assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
        }
        const csv = yield* exported(app, `from=${today()}&to=${today()}&format=csv`, minted.key, ip)
        assert.strictEqual(csv.status, 200)
        assert.strictEqual(csv.headers.get("content-type"), "text/csv; charset=utf-8")
        assert.match(csv.headers.get("content-disposition")!, /attachment; filename="receipts-acct_.*\.csv"/)
        // Each line ends with the key that spent (and its parent, for a child key: none here).
        const [header, ...rest] = csv.text.trimEnd().split("\r\n")
        assert.strictEqual(
          header,
          "receipt_id,created_at,operation,platform,quoted,charged,free_tier,grant,balance,refunded,idempotency_key,key_id,parent_key_id"
        )
        for (const line of rest) assert.match(line, /,key_\w+,$/)
        const lines = [header, ...rest.map((line) => line.replace(/,key_\w+,$/, ""))]
        assert.strictEqual(lines.length, keys.length + 1)
        assert.include(lines[1]!, `,"'=HYPERLINK(""http://evil.example"",""x"")"`)
        assert.isTrue(lines[2]!.endsWith(",'+1+1+1+1"))
        assert.isTrue(lines[3]!.endsWith(",'-2-2-2-2"))
        assert.isTrue(lines[4]!.endsWith(",'@SUM(A1:A9)"))
        assert.isTrue(lines[5]!.endsWith(",plain-key-123"))
        assert.isTrue(lines[6]!.endsWith(',"a ""quoted"", key"'))
        assert.include(lines[1]!, ",testEcho,profnet,3,3,0,0,3,0,")

        const jsonl = yield* exported(app, `from=${today()}&to=${today()}&format=jsonl`, minted.key, ip)
        assert.strictEqual(jsonl.headers.get("content-type"), "application/x-ndjson")
        const receipts = jsonl.text
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line))
        assert.deepStrictEqual(
          receipts.map((receipt) => receipt.idempotency_key),
          keys,
          "oldest first"
        )
        for (const receipt of receipts) {
          const one = yield* app.call(`/v1/receipts/${receipt.id}`, { key: minted.key, ip })
          assert.deepStrictEqual(receipt, one.body, "as GET /v1/receipts/{id} answers it")
        }
        // Another day's range has none; the header alone.
        const tomorrow = dayToIso(dayOf(Date.now()) + 1)
        const empty = yield* exported(app, `from=${tomorrow}&to=${tomorrow}`, minted.key, ip)
        assert.strictEqual(empty.text.split("\r\n").filter((line) => line.length > 0).length, 1)
      })
    )

    it.effect("the bearer names the account; every refusal is one of the problems, with its param", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.93.2.1"
        const minted = yield* app.mint(ip)
        const token = (yield* signIn(app, "export@example.com", { key: minted.key, ip })).management_token
        yield* spend(app, minted.key, ip, 2)
        const byToken = yield* exported(app, `from=${today()}&to=${today()}&format=jsonl`, token, ip)
        assert.strictEqual(byToken.status, 200)
        assert.strictEqual(byToken.text.trimEnd().split("\n").length, 1)

        const problems: ReadonlyArray<readonly [string, string | undefined, string, string | undefined]> = [
          [`to=${today()}`, minted.key, "INVALID_INPUT", "from"],
          [`from=2026-02-30&to=${today()}`, minted.key, "INVALID_INPUT", "from"],
          [`from=${today()}&to=2026/01/01`, minted.key, "INVALID_INPUT", "to"],
          ["from=2026-05-02&to=2026-05-01", minted.key, "INVALID_INPUT", "to"],
          ["from=2025-01-01&to=2026-01-02", minted.key, "INVALID_INPUT", "to"],
          [`from=${today()}&to=${today()}&format=xlsx`, minted.key, "INVALID_INPUT", "format"],
          [`from=${today()}&to=${today()}`, undefined, "KEY_REQUIRED", undefined],
          [`from=${today()}&to=${today()}`, "svc_not_a_real_key_at_all_0000000", "UNAUTHORIZED", undefined]
        ]
        for (const [query, bearer, code, param] of problems) {
          const reply = yield* exported(app, query, bearer, ip)
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json", query)
          const body = JSON.parse(reply.text)
          assert.strictEqual(body.code, code, `${query}: ${reply.text}`)
          if (param !== undefined) assert.strictEqual(body.param, param, query)
        }
        // A sign-in governing two accounts names one.
        const second = yield* app.mint("10.93.2.2")
        yield* signIn(app, "export@example.com", { key: second.key, ip: "10.93.2.2" })
        const both = (yield* signIn(app, "export@example.com", { ip })).management_token
        const ambiguous = yield* exported(app, `from=${today()}&to=${today()}`, both, ip)
        assert.strictEqual(JSON.parse(ambiguous.text).code, "AUTH_REQUIRED")
        const chosen = yield* exported(
          app,
          `from=${today()}&to=${today()}&account_id=${minted.account_id}`,
          both,
          ip
        )
        assert.strictEqual(chosen.status, 200)
        const foreign = yield* exported(
          app,
          `from=${today()}&to=${today()}&account_id=acct_someone_else`,
          both,
          ip
        )
        assert.strictEqual(JSON.parse(foreign.text).code, "AUTH_REQUIRED")

        // Audit 2: exports were unlimited (150 full-year exports in 1.9 s). 10 a minute per account
        // (refused ones above took none); the 11th is RATE_LIMITED, whatever the bearer.
        const query = `from=${today()}&to=${today()}&format=jsonl`
        for (let n = 2; n < 10; n++)
          assert.strictEqual((yield* exported(app, query, minted.key, ip)).status, 200)
        const limited = yield* exported(app, `${query}&account_id=${minted.account_id}`, both, ip)
        assert.strictEqual(limited.status, 429, limited.text)
        assert.strictEqual(limited.headers.get("content-type"), "application/problem+json")
        assert.strictEqual(JSON.parse(limited.text).code, "RATE_LIMITED")
        assert.isAbove(JSON.parse(limited.text).retry_after_seconds, 0)
        // Another account is not held back.
        assert.strictEqual((yield* exported(app, query, second.key, "10.93.2.2")).status, 200)
      })
    )

    it.effect(
      "100,000 receipts stream in constant memory, a page at a time",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.93.3.1"
          const minted = yield* app.mint(ip)
          const sql = yield* SqlClient.SqlClient
          const [key] = yield* Effect.orDie(
            sql`SELECT id FROM api_keys WHERE account_id = ${minted.account_id}`
          )
          const startAt = Date.parse(`${today()}T00:00:00Z`)
          yield* receiptsFor(minted.account_id, String(key!.id), 100_000, startAt)
          const query = `from=${today()}&to=${today()}&format=csv`
          const yesterday = dayToIso(dayOf(startAt) - 1)
          const small = yield* streamed(app, `from=${yesterday}&to=${yesterday}&format=csv`, minted.key, ip)
          assert.strictEqual(small.lines, 1)
          const big = yield* streamed(app, query, minted.key, ip)
          assert.strictEqual(big.status, 200)
          assert.strictEqual(big.lines, 100_001, "the header and every receipt")
          assert.include(big.last, "rcpt_bulk0100000")
          const jsonl = yield* streamed(app, query.replace("csv", "jsonl"), minted.key, ip)
          assert.strictEqual(jsonl.lines, 100_000)
          console.log(
            `export of 100,000 receipts (${storeName}): csv ${(big.bytes / 1024 / 1024).toFixed(1)} MB in ${big.ms} ms, live +${big.liveGrowthMb.toFixed(1)} MB (peak ${big.peakLiveMb.toFixed(0)} MB), rss +${big.rssGrowthMb.toFixed(1)} MB (peak ${big.peakRssMb.toFixed(0)} MB); jsonl ${(jsonl.bytes / 1024 / 1024).toFixed(1)} MB in ${jsonl.ms} ms, live +${jsonl.liveGrowthMb.toFixed(1)} MB, rss +${jsonl.rssGrowthMb.toFixed(1)} MB`
          )
          // Held at once: a page of 1,000 receipts and the buffers in flight, not the file (7.4 MB of
          // CSV, 21.3 of JSON Lines): the memory does not grow with what is exported. Measured live
          // (the heap and the buffers outside it) at every megabyte: 1.7-3.3 MB on either store.
          assert.isBelow(big.liveGrowthMb, 7)
          assert.isBelow(jsonl.liveGrowthMb, 7)
        }),
      { timeout: 240_000 }
    )
  })
})
