import { createHash, timingSafeEqual } from "node:crypto"
import { join } from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Context, Effect, FileSystem, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config.ts"
import { adminTokenPath } from "../contract/adminRpc.ts"
import type { RateLimited } from "../contract/errors.ts"
import { encodeBase62 } from "../domain/secrets.ts"
import { Ids } from "./Ids.ts"
import { RateLimits } from "./RateLimits.ts"

const digest = (value: string) => createHash("sha256").update(value).digest()

/** The bearer token of the operator surface (`/admin/rpc`): ADMIN_TOKEN, or one generated once into a file. */
export class AdminToken extends Context.Service<
  AdminToken,
  {
    /** Constant-time comparison with the operator token. */
    readonly check: (candidate: string) => boolean
    /**
     * `check` for a request from `ip`: its wrong tokens are counted, and past
     * OPERATOR_AUTH_FAILURES_PER_IP (10 per 15 minutes) RATE_LIMITED before any comparison.
     */
    readonly checkFrom: (candidate: string, ip: string) => Effect.Effect<boolean, RateLimited>
  }
>()("services/AdminToken") {
  static readonly layerNoDeps = Layer.effect(
    AdminToken,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const token = Option.isSome(config.adminToken)
        ? Redacted.value(config.adminToken.value)
        : yield* tokenFromFile(adminTokenPath(config.dataDir, config.port))
      const expected = digest(token)
      const limits = yield* RateLimits
      const rule = config.policy.operatorAuthFailuresPerIp
      const check = (candidate: string) => timingSafeEqual(digest(candidate), expected)
      return AdminToken.of({
        check,
        checkFrom: (candidate, ip) =>
          limits.checkFailures(`admin-token-failures:${ip}`, rule, "admin tokens", () => check(candidate))
      })
    })
  )

  static readonly layer = AdminToken.layerNoDeps.pipe(Layer.provide(NodeFileSystem.layer))
}

/** Reuses the file if it exists; otherwise creates it (0600, exclusively, so two instances agree on one token). */
const tokenFromFile = Effect.fn("AdminToken.fromFile")(function* (path: string) {
  const fs = yield* FileSystem.FileSystem
  const ids = yield* Ids
  const existing = yield* readToken(path)
  if (existing !== undefined) {
    yield* Effect.logInfo(`admin token: ADMIN_TOKEN is unset, using the token in ${path}`)
    return existing
  }
  yield* fs.makeDirectory(join(path, ".."), { recursive: true })
  const fresh = `svcadm_${encodeBase62(yield* ids.secretBytes).slice(0, 40)}`
  const created = yield* fs.writeFileString(path, `${fresh}\n`, { flag: "wx", mode: 0o600 }).pipe(
    Effect.as(true),
    Effect.catchReason("PlatformError", "AlreadyExists", () => Effect.succeed(false))
  )
  yield* Effect.logInfo(
    `admin token: ADMIN_TOKEN is unset, ${created ? "generated a token into" : "using the token in"} ${path}`
  )
  if (created) return fresh
  const raced = yield* readToken(path)
  return raced ?? (yield* Effect.die(new Error(`admin token file ${path} is empty`)))
})

const readToken = (path: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.map(Option.some),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeedNone)
    )
    if (Option.isNone(text)) return undefined
    const token = text.value.trim()
    if (token.length === 0) return yield* Effect.die(new Error(`admin token file ${path} is empty`))
    return token
  })
