import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, Option, Redacted } from "effect"
import { AppConfig, type AppConfigShape } from "../../src/config.ts"
import { adminTokenPath } from "../../src/contract/adminRpc.ts"
import { AdminToken } from "../../src/services/AdminToken.ts"
import { Ids } from "../../src/services/Ids.ts"
import { RateLimits } from "../../src/services/RateLimits.ts"

/** Builds AdminToken under `config`, returning it with every log message written while building it. */
const build = (config: Partial<AppConfigShape>) =>
  Effect.gen(function* () {
    const logs: Array<string> = []
    const logger = Logger.make(({ message }) => {
      logs.push(JSON.stringify(message))
    })
    const token = yield* Effect.gen(function* () {
      return yield* AdminToken
    }).pipe(
      Effect.provide(
        AdminToken.layer.pipe(
          Layer.provide([AppConfig.layerTest(config), Ids.layer, RateLimits.layerMemory]),
          Layer.provide(Logger.layer([logger]))
        )
      )
    )
    return { token, logs }
  })

describe("AdminToken", () => {
  it.effect("uses ADMIN_TOKEN when set, comparing in constant time", () =>
    Effect.gen(function* () {
      const { token } = yield* build({ adminToken: Option.some(Redacted.make("s3cret")) })
      assert.isTrue(token.check("s3cret"))
      assert.isFalse(token.check("s3cre"))
      assert.isFalse(token.check(""))
    })
  )

  it.effect("without ADMIN_TOKEN, generates a 0600 file once, reuses it, and logs its path only", () =>
    Effect.gen(function* () {
      const root = mkdtempSync(join(tmpdir(), "svc-admin-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(root, { recursive: true, force: true })))
      const dataDir = join(root, "nested", "data")
      const first = yield* build({ adminToken: Option.none(), dataDir })
      const path = join(dataDir, "admin-token")
      const secret = readFileSync(path, "utf8").trim()
      assert.match(secret, /^svcadm_[0-9A-Za-z]{40}$/)
      assert.strictEqual(statSync(path).mode & 0o777, 0o600)
      assert.isTrue(first.token.check(secret))
      assert.isFalse(first.token.check(`${secret}x`))
      assert.strictEqual(first.logs.length, 1)
      assert.include(first.logs[0], path)
      assert.notInclude(first.logs[0], secret)

      const second = yield* build({ adminToken: Option.none(), dataDir })
      assert.strictEqual(readFileSync(path, "utf8").trim(), secret)
      assert.isTrue(second.token.check(secret))
      assert.notInclude(second.logs.join(), secret)
    })
  )

  it("keeps an in-memory store's token in the temp directory, per port", () => {
    assert.strictEqual(adminTokenPath(":memory:", 8787), join(tmpdir(), "svc-admin-token-8787"))
    assert.strictEqual(adminTokenPath("./.data", 8787), join(".data", "admin-token"))
  })
})
