import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { layerWorld, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { baseUrl, skipReason, withBrowser } from "./browser.ts"

/**
 * Every data operation's request sample exactly as `/docs` (Scalar) renders it in Chromium: its curl
 * line, with every parameter Scalar fills in (the examples, the first value of an enum, and optional
 * parameters left empty, `cursor=`). Sent with a fresh trial key each, every one answers 200.
 */
/** The world a service started with no configuration simulates, which the examples are taken from. */
const defaultWorld = layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))

describe(`the /docs request samples (${storeName})`, () => {
  layer(testApp(operations, {}, defaultWorld), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "each data operation's curl sample, sent with a fresh trial key, answers 200",
      (context) =>
        Effect.gen(function* () {
          if (skipReason !== undefined) return context.skip(skipReason)
          const app = yield* TestApp
          const samples = yield* withBrowser(app.url, { ip: "10.93.0.1" }, async ({ page }) => {
            const response = await page.goto(`${baseUrl}/docs`)
            assert.strictEqual(response?.status(), 200)
            await page.getByText("Mint a free trial key").first().waitFor({ timeout: 30_000 })
            const found: Array<{ id: string; url: string; idempotencyKey: string | undefined }> = []
            for (const operation of operations) {
              const path = `/v1${operation.path}`
              await page.evaluate((hash) => {
                ;(globalThis as unknown as { location: { hash: string } }).location.hash = hash
              }, `#tag/${operation.platform}/GET${path}`)
              const sample = page.locator("pre code", { hasText: `curl '${baseUrl}${path}?` }).first()
              await sample.waitFor({ timeout: 15_000 })
              const text = (await sample.textContent()) ?? ""
              const url = /curl '([^']+)'/.exec(text)?.[1]
              assert.isDefined(url, `${operation.id}: ${text}`)
              found.push({
                id: operation.id,
                url: url!,
                idempotencyKey: /Idempotency-Key: ([^']+)'/.exec(text)?.[1]
              })
            }
            return found
          })
          assert.strictEqual(samples.length, 17)
          // The samples name optional parameters left empty; `cursor=` is among them.
          assert.isTrue(samples.some((sample) => sample.url.includes("cursor=&")))
          const failed: Array<string> = []
          for (const [index, sample] of samples.entries()) {
            const ip = `10.93.1.${index + 1}`
            const { key } = yield* app.mint(ip)
            const url = new URL(sample.url)
            const reply = yield* app.call(`${url.pathname}${url.search}`, {
              key,
              ip,
              ...(sample.idempotencyKey === undefined ? {} : { idempotencyKey: sample.idempotencyKey })
            })
            if (reply.status !== 200)
              failed.push(`${sample.id} ${sample.url}: ${reply.status} ${JSON.stringify(reply.body)}`)
          }
          assert.deepStrictEqual(failed, [], "every sample answers 200")
        }),
      180_000
    )
  })
})
