import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AdminClient } from "../../src/clients/operator-cli/AdminClient.ts"
import { type ReceiptVerification, verifyReceipt } from "../../src/clients/sdk/index.ts"
import { dayOf, dayToIso } from "../../src/domain/time.ts"
import { ReceiptKeyRefresh, receiptKeyPath } from "../../src/metering/ReceiptSigner.ts"
import { newPrivateJwk } from "../../src/metering/signingKeys.ts"
import { buy } from "../billing/support.ts"
import { spend } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { runCli } from "../rpc/cli.ts"
import { appInstance, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const today = () => dayToIso(dayOf(Date.now()))

type Jwks = { readonly keys: ReadonlyArray<Record<string, unknown>> }

const jwksOf = (app: TestApp["Service"]) =>
  Effect.map(app.call("/.well-known/jwks.json"), (reply) => {
    assert.strictEqual(reply.status, 200)
    return reply.body as Jwks
  })

const verified = (receipt: unknown, jwks: Jwks) =>
  Effect.promise(() => verifyReceipt(receipt, jwks as Parameters<typeof verifyReceipt>[1]))

const assertValid = (result: ReceiptVerification, what: string) =>
  assert.isTrue(result.valid, `${what}: ${result.valid ? "" : result.message}`)

/** Everything written to the console and the standard streams while `effect` runs. */
const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const lines: Array<string> = []
    const methods = ["log", "info", "warn", "error", "debug"] as const
    const saved = methods.map((name) => console[name])
    const writes = [process.stdout.write, process.stderr.write]
    for (const name of methods)
      console[name] = (...args: Array<unknown>) => void lines.push(args.map(String).join(" "))
    process.stdout.write = ((chunk: unknown) => lines.push(String(chunk)) > 0) as typeof process.stdout.write
    process.stderr.write = ((chunk: unknown) => lines.push(String(chunk)) > 0) as typeof process.stderr.write
    return effect.pipe(
      Effect.map((value) => ({ value, output: lines.join("\n") })),
      Effect.ensuring(
        Effect.sync(() => {
          methods.forEach((name, i) => {
            console[name] = saved[i]!
          })
          process.stdout.write = writes[0]!
          process.stderr.write = writes[1]!
        })
      )
    )
  })

const rotateOn = (url: string) =>
  Effect.flatMap(AdminClient, (admin) => admin.rotateReceiptKey()).pipe(
    Effect.provide(AdminClient.layerFor(url, "test-admin-token-7f3a9c2e5b8d1f4a6c"))
  )

describe(`verifiable receipts (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("the key set holds only public keys, cacheable", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* app.call("/.well-known/jwks.json")
        assert.strictEqual(reply.status, 200)
        assert.strictEqual(reply.headers.get("content-type"), "application/jwk-set+json")
        assert.strictEqual(reply.headers.get("cache-control"), "public, max-age=300")
        const jwks = reply.body as Jwks
        assert.isAtLeast(jwks.keys.length, 1)
        for (const key of jwks.keys) {
          assert.deepStrictEqual(Object.keys(key).sort(), ["alg", "crv", "kid", "kty", "use", "x"])
          assert.strictEqual(key.alg, "EdDSA")
          assert.strictEqual(key.crv, "Ed25519")
        }
        assert.notInclude(reply.text, '"d"')
      })
    )

    it.effect("receipts listed, read one by one and exported (CSV and JSON Lines) verify", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.95.1.1"
        const minted = yield* app.mint(ip)
        yield* buy(app, "flex", { key: minted.key, ip })
        for (const cost of [1, 2, 3])
          assert.strictEqual((yield* spend(app, minted.key, ip, cost)).status, 200)
        const jwks = yield* jwksOf(app)

        const page = yield* app.call("/v1/receipts", { key: minted.key, ip })
        const listed = page.body.receipts as ReadonlyArray<Record<string, unknown>>
        assert.strictEqual(listed.length, 3)
        for (const receipt of listed) {
          assert.isString(receipt.signature)
          assertValid(yield* verified(receipt, jwks), "listed")
          const one = yield* app.call(`/v1/receipts/${receipt.id}`, { key: minted.key, ip })
          assertValid(yield* verified(one.body, jwks), "read alone")
          // Each field changed, the receipt no longer verifies.
          const altered = yield* verified({ ...one.body, charged: (one.body.charged as number) + 1 }, jwks)
          assert.deepInclude(altered, { valid: false, reason: "altered" })
        }

        const range = `from=${today()}&to=${today()}`
        const jsonl = yield* app.call(`/v1/receipts/export?${range}&format=jsonl`, { key: minted.key, ip })
        const lines = jsonl.text.trimEnd().split("\n")
        assert.strictEqual(lines.length, 3)
        for (const line of lines)
          assertValid(yield* verified(JSON.parse(line), jwks), "exported as JSON Lines")

        const csv = yield* app.call(`/v1/receipts/export?${range}&format=csv`, { key: minted.key, ip })
        const [header, ...rows] = csv.text.trimEnd().split("\r\n")
        const columns = header!.split(",")
        assert.strictEqual(columns[columns.length - 1], "signature")
        const byId = new Map(lines.map((line) => [JSON.parse(line).id, JSON.parse(line)]))
        for (const row of rows) {
          const cells = row.split(",")
          const receipt = byId.get(cells[0])
          // The column holds the receipt's signature: with the receipt's JSON it verifies.
          assertValid(
            yield* verified({ ...receipt, signature: cells[cells.length - 1] }, jwks),
            "CSV signature"
          )
        }
      })
    )

    it.effect("a data answer is signed only when asked (Prefer: receipt-signature)", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.95.2.1"
        const minted = yield* app.mint(ip)
        const jwks = yield* jwksOf(app)
        const plain = yield* app.call("/v1/profnet/test-echo?value=a&cost=1", { key: minted.key, ip })
        assert.strictEqual(plain.status, 200)
        assert.isUndefined(plain.body.receipt.signature)
        assert.isNull(plain.headers.get("preference-applied"))

        const prefer = { prefer: "respond-async, receipt-signature" }
        const asked = yield* app.call("/v1/profnet/test-echo?value=b&cost=1", {
          key: minted.key,
          ip,
          idempotencyKey: "signed-answer-1",
          headers: prefer
        })
        assert.strictEqual(asked.status, 200, asked.text)
        assert.strictEqual(asked.headers.get("preference-applied"), "receipt-signature")
        assertValid(yield* verified(asked.body.receipt, jwks), "data answer")
        // The same receipt as the receipts route serves it (and signs it).
        const stored = yield* app.call(`/v1/receipts/${asked.body.receipt.id}`, { key: minted.key, ip })
        assert.deepStrictEqual(stored.body, asked.body.receipt)

        // A replay's receipt says `replayed`, and its signature covers that.
        const replay = yield* app.call("/v1/profnet/test-echo?value=b&cost=1", {
          key: minted.key,
          ip,
          idempotencyKey: "signed-answer-1",
          headers: prefer
        })
        assert.strictEqual(replay.body.receipt.replayed, true)
        assertValid(yield* verified(replay.body.receipt, jwks), "replayed answer")
        const flipped = yield* verified({ ...replay.body.receipt, replayed: false }, jwks)
        assert.isFalse(flipped.valid)

        // A problem has no receipt to sign and says nothing of the preference.
        const refused = yield* app.call("/v1/profnet/test-echo?cost=1", {
          key: minted.key,
          ip,
          headers: prefer
        })
        assert.strictEqual(refused.status, 400)
        assert.isNull(refused.headers.get("preference-applied"))
      })
    )

    it.effect("an MCP tool call's receipt is signed when its _meta asks, in both eras", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.95.3.1"
        const minted = yield* app.mint(ip)
        const jwks = yield* jwksOf(app)
        for (const mode of modes) {
          const client = yield* connect(`${app.url}/mcp`, { key: minted.key, ip }, mode)
          const plain = yield* callTool(client, "testEcho", { value: "m", cost: 1 })
          assert.isFalse(plain.isError, plain.text)
          assert.isUndefined(plain.structured.receipt.signature)
          const asked = yield* Effect.promise(() =>
            client.callTool({
              name: "testEcho",
              arguments: { value: "n", cost: 1 },
              _meta: { "svc/receipt-signature": true }
            })
          )
          const envelope = asked.structuredContent as { receipt: Record<string, unknown> }
          assertValid(yield* verified(envelope.receipt, jwks), `MCP ${mode.name}`)
          const text = (asked.content as ReadonlyArray<{ text: string }>)[0]!.text
          assertValid(yield* verified(JSON.parse(text).receipt, jwks), `MCP text ${mode.name}`)
        }
      }).pipe(Effect.scoped)
    )

    it.effect("a rotation signs with a new key and keeps the old receipts verifiable", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.95.4.1"
        const minted = yield* app.mint(ip)
        yield* spend(app, minted.key, ip, 1)
        const before = (yield* app.call("/v1/receipts?limit=1", { key: minted.key, ip })).body.receipts[0]
        const oldJwks = yield* jwksOf(app)
        const rotated = yield* Effect.flatMap(AdminClient, (admin) => admin.rotateReceiptKey()).pipe(
          Effect.provide(AdminClient.layerFor(app.url, "test-admin-token-7f3a9c2e5b8d1f4a6c"))
        )
        assert.notStrictEqual(rotated.kid, rotated.previous_kid)
        assert.strictEqual(rotated.published[0], rotated.kid)
        assert.include(rotated.published, rotated.previous_kid)
        const newJwks = yield* jwksOf(app)
        assert.strictEqual(newJwks.keys[0]!.kid, rotated.kid)
        assert.include(
          newJwks.keys.map((key) => key.kid),
          rotated.previous_kid
        )
        // The old receipt as kept verifies against the new set; read again it is signed with the new key.
        assertValid(yield* verified(before, newJwks), "old receipt, new key set")
        const again = (yield* app.call(`/v1/receipts/${before.id}`, { key: minted.key, ip })).body
        const result = yield* verified(again, newJwks)
        assert.deepStrictEqual(result, { valid: true, kid: rotated.kid })
        // A verifier holding only the old set is told to fetch it again.
        assert.deepInclude(yield* verified(again, oldJwks), { valid: false, reason: "unknown_key" })
        // The operator's command does the same, and prints the new key.
        const run = yield* runCli(["admin", "receipts", "rotate-key"], {
          SVC_BASE_URL: app.url,
          SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c"
        })
        assert.strictEqual(run.code, 0, run.stderr)
        const printed = JSON.parse(run.stdout) as { kid: string; previous_kid: string }
        assert.strictEqual(printed.previous_kid, rotated.kid)
        assert.strictEqual((yield* jwksOf(app)).keys.length, newJwks.keys.length + 1)
        assertValid(yield* verified(before, yield* jwksOf(app)), "old receipt after two rotations")
      })
    )

    it.effect("two instances on one database sign with the same key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const second = yield* appInstance(testOperations)
        const third = yield* appInstance(testOperations)
        const sets = [yield* jwksOf(app), yield* jwksOf(second.client), yield* jwksOf(third.client)]
        assert.deepStrictEqual(sets[1], sets[0])
        assert.deepStrictEqual(sets[2], sets[0])
        const ip = "10.95.5.1"
        const minted = yield* app.mint(ip)
        yield* spend(app, minted.key, ip, 1)
        const id = (yield* app.call("/v1/receipts?limit=1", { key: minted.key, ip })).body.receipts[0].id
        const kids = new Set<string>()
        for (const instance of [app, second.client, third.client]) {
          const receipt = (yield* instance.call(`/v1/receipts/${id}`, { key: minted.key, ip })).body
          const result = yield* verified(receipt, sets[0]!)
          assertValid(result, instance.url)
          if (result.valid) kids.add(result.kid)
        }
        assert.strictEqual(kids.size, 1)
      }).pipe(Effect.scoped)
    )

    it.effect("RECEIPT_SIGNING_KEY signs, is published, never shown, and only the operator rotates it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const privateJwk = newPrivateJwk()
        const d = JSON.parse(privateJwk).d as string
        const { value: instance, output } = yield* captured(
          appInstance(testOperations, { receiptSigningKey: Option.some(Redacted.make(privateJwk)) })
        )
        const jwks = yield* jwksOf(instance.client)
        const ip = "10.95.6.1"
        const minted = yield* app.mint(ip)
        yield* spend(app, minted.key, ip, 1)
        const listed = yield* instance.client.call("/v1/receipts", { key: minted.key, ip })
        const result = yield* verified(listed.body.receipts[0], jwks)
        assertValid(result, "signed with RECEIPT_SIGNING_KEY")
        assert.strictEqual(jwks.keys.filter((key) => result.valid && key.kid === result.kid).length, 1)
        const refused = yield* captured(Effect.exit(rotateOn(instance.client.url)))
        assert.isTrue(Exit.isFailure(refused.value))
        assert.include(JSON.stringify(refused.value), "ReceiptKeyFixed")
        assert.include(output, "receipts: signing with key", "the start-up log was captured")
        // Nowhere: not in the log, the key set, an answer or the refusal.
        for (const text of [
          output,
          refused.output,
          JSON.stringify(jwks),
          listed.text,
          JSON.stringify(refused.value)
        ])
          assert.notInclude(text, d)
      }).pipe(Effect.scoped)
    )

    it.effect("PGlite on disk keeps its key in DATA_DIR/receipt-signing-key (0600), made once", () =>
      Effect.gen(function* () {
        const dataDir = mkdtempSync(join(tmpdir(), "svc-receipt-key-"))
        const { value: first, output } = yield* captured(appInstance(testOperations, { dataDir }))
        const path = receiptKeyPath(dataDir)
        assert.strictEqual(statSync(path).mode & 0o777, 0o600)
        const kept = readFileSync(path, "utf8")
        const d = JSON.parse(kept).d as string
        assert.include(output, path, "the start-up log names the file")
        assert.notInclude(output, d)
        assert.notInclude(JSON.stringify(yield* jwksOf(first.client)), d)
        const second = yield* appInstance(testOperations, { dataDir })
        assert.strictEqual(readFileSync(path, "utf8"), kept, "the second start reads it")
        const ip = "10.95.7.1"
        const minted = yield* first.client.mint(ip)
        yield* spend(first.client, minted.key, ip, 1)
        const jwks = yield* jwksOf(first.client)
        const kids = new Set<string>()
        for (const instance of [first.client, second.client]) {
          const receipt = (yield* instance.call("/v1/receipts?limit=1", { key: minted.key, ip })).body
            .receipts[0]
          const result = yield* verified(receipt, jwks)
          assertValid(result, "file key")
          if (result.valid) kids.add(result.kid)
        }
        assert.strictEqual(kids.size, 1)
        // A rotation replaces the file and keeps the old key published.
        const rotated = yield* rotateOn(first.client.url)
        assert.notStrictEqual(readFileSync(path, "utf8"), kept)
        assert.strictEqual(statSync(path).mode & 0o777, 0o600)
        assert.includeMembers(
          (yield* jwksOf(first.client)).keys.map((key) => key.kid),
          [rotated.kid, rotated.previous_kid]
        )
      }).pipe(Effect.scoped)
    )

    it.effect("instances starting together on a database without a key agree on one", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        // As a new database: no key yet (this file's earlier keys forgotten).
        yield* Effect.orDie((yield* SqlClient.SqlClient)`DELETE FROM receipt_signing_keys`)
        const started = yield* Effect.all(
          [appInstance(testOperations), appInstance(testOperations), appInstance(testOperations)],
          { concurrency: "unbounded" }
        )
        const sets = yield* Effect.forEach(started, ({ client }) => jwksOf(client))
        assert.strictEqual(sets[0]!.keys.length, 1)
        for (const set of sets) assert.deepStrictEqual(set, sets[0])
        const ip = "10.95.8.1"
        const minted = yield* app.mint(ip)
        yield* spend(app, minted.key, ip, 1)
        const kids = new Set<string>()
        for (const { client } of started) {
          const receipt = (yield* client.call("/v1/receipts?limit=1", { key: minted.key, ip })).body
            .receipts[0]
          const result = yield* verified(receipt, sets[0]!)
          assertValid(result, client.url)
          if (result.valid) kids.add(result.kid)
        }
        assert.strictEqual(kids.size, 1)
      }).pipe(Effect.scoped)
    )

    it.effect("a rotation made by one instance is taken up by the others on the same database", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        // Another instance that looks for a newer key at every signature (a minute by default).
        const other = yield* appInstance(testOperations).pipe(Effect.provideService(ReceiptKeyRefresh, 0))
        const ip = "10.95.9.1"
        const minted = yield* app.mint(ip)
        yield* spend(app, minted.key, ip, 1)
        const id = (yield* app.call("/v1/receipts?limit=1", { key: minted.key, ip })).body.receipts[0].id
        const kidOf = (instance: TestApp["Service"]) =>
          Effect.gen(function* () {
            const receipt = (yield* instance.call(`/v1/receipts/${id}`, { key: minted.key, ip })).body
            const result = yield* verified(receipt, yield* jwksOf(app))
            assertValid(result, instance.url)
            return result.valid ? result.kid : ""
          })
        const rotated = yield* rotateOn(app.url)
        assert.strictEqual(yield* kidOf(app), rotated.kid)
        assert.strictEqual(yield* kidOf(other.client), rotated.kid)
      }).pipe(Effect.scoped)
    )
  })
})
