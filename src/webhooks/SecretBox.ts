import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Context, Data, Effect, FileSystem, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config.ts"

/**
 * Webhook signing secrets at rest. A signature is an HMAC made with the secret itself, so the
 * service must be able to read it back: it cannot be a one-way hash like every other secret here.
 * It is encrypted with AES-256-GCM under a key from configuration (`WEBHOOK_SECRET_KEY`), or one
 * generated once into `DATA_DIR/webhook-secret-key` (0600) as the operator token is. The row's id
 * is the authenticated data: a sealed secret copied onto another endpoint does not open.
 */

/** Where the generated key lives (a per-port file in the temp directory when the store is in memory). */
export const webhookKeyPath = (dataDir: string, port: number): string =>
  dataDir === ":memory:"
    ? join(tmpdir(), `svc-webhook-secret-key-${port}`)
    : join(dataDir, "webhook-secret-key")

/** A sealed secret that does not open with this instance's key (another key, or a changed row). */
export class SecretUnreadable extends Data.TaggedError("SecretUnreadable")<{ readonly message: string }> {}

/** 32 bytes from base64 (44 characters) or hex (64); anything else stops the start-up. */
const keyBytes = (text: string, from: string): Effect.Effect<Buffer> => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return bytes.length === 32
    ? Effect.succeed(bytes)
    : Effect.die(
        new Error(
          `${from} must be 32 bytes, as base64 (44 characters) or hex (64); generate one with: openssl rand -base64 32`
        )
      )
}

const keyIdOf = (key: Buffer) => createHash("sha256").update(key).digest("hex").slice(0, 8)

export class SecretBox extends Context.Service<
  SecretBox,
  {
    /** `v1:<key id>:<base64 of iv (12), tag (16) and ciphertext>`, bound to `boundTo` (the row's id). */
    readonly seal: (secret: string, boundTo: string) => string
    readonly open: (sealed: string, boundTo: string) => Effect.Effect<string, SecretUnreadable>
  }
>()("webhooks/SecretBox") {
  static readonly make = (key: Buffer) => {
    const keyId = keyIdOf(key)
    const seal = (secret: string, boundTo: string) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      cipher.setAAD(Buffer.from(boundTo, "utf8"))
      const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()])
      return `v1:${keyId}:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString("base64")}`
    }
    const open = (sealed: string, boundTo: string) => {
      const [version, sealedWith, body] = sealed.split(":")
      if (version !== "v1" || body === undefined)
        return Effect.fail(new SecretUnreadable({ message: "the stored secret is not in a known format" }))
      if (sealedWith !== keyId)
        return Effect.fail(
          new SecretUnreadable({
            message: `the secret was sealed with key ${sealedWith}, this instance has key ${keyId}: give every instance the same WEBHOOK_SECRET_KEY`
          })
        )
      return Effect.try({
        try: () => {
          const bytes = Buffer.from(body, "base64")
          const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12))
          decipher.setAAD(Buffer.from(boundTo, "utf8"))
          decipher.setAuthTag(bytes.subarray(12, 28))
          return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8")
        },
        catch: () =>
          new SecretUnreadable({ message: "the stored secret does not authenticate (changed or moved)" })
      })
    }
    return SecretBox.of({ seal, open })
  }

  static readonly layerNoDeps = Layer.effect(
    SecretBox,
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (Option.isSome(config.webhookSecretKey))
        return SecretBox.make(
          yield* keyBytes(Redacted.value(config.webhookSecretKey.value), "WEBHOOK_SECRET_KEY")
        )
      const path = webhookKeyPath(config.dataDir, config.port)
      return SecretBox.make(yield* keyBytes(yield* keyFromFile(path), path))
    })
  )

  static readonly layer = SecretBox.layerNoDeps.pipe(Layer.provide(NodeFileSystem.layer))
}

/** Reuses the file if it exists; otherwise creates it (0600, exclusively, so two instances agree on one key). */
const keyFromFile = Effect.fn("SecretBox.keyFromFile")(function* (path: string) {
  const fs = yield* FileSystem.FileSystem
  const read = fs.readFileString(path).pipe(
    Effect.map((text) => Option.some(text.trim())),
    Effect.catchReason("PlatformError", "NotFound", () => Effect.succeedNone)
  )
  const existing = yield* read
  if (Option.isSome(existing)) return existing.value
  yield* fs.makeDirectory(join(path, ".."), { recursive: true })
  const fresh = randomBytes(32).toString("base64")
  const created = yield* fs.writeFileString(path, `${fresh}\n`, { flag: "wx", mode: 0o600 }).pipe(
    Effect.as(true),
    Effect.catchReason("PlatformError", "AlreadyExists", () => Effect.succeed(false))
  )
  yield* Effect.logInfo(
    `webhooks: WEBHOOK_SECRET_KEY is unset, ${created ? "generated a key into" : "using the key in"} ${path} (every instance needs the same key)`
  )
  if (created) return fresh
  const raced = yield* read
  return Option.isSome(raced) ? raced.value : yield* Effect.die(new Error(`${path} is empty`))
})
