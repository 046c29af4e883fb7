import { join } from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Clock, Context, Data, Effect, FileSystem, Layer, Option, Redacted, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { CompactSign } from "jose"
import { AppConfig } from "../config.ts"
import { receiptPayload, receiptSignatureAlg } from "../contract/receiptSignature.ts"
import * as Row from "../store/rows.ts"
import type { CallOutcome, Metered } from "./call.ts"
import { type Receipt, withSignedReceipt } from "./receipt.ts"
import { newPrivateJwk, type PublicJwk, publicOnly, type SigningKey, signingKeyOf } from "./signingKeys.ts"

/**
 * Signs receipts (contract/receiptSignature.ts) and publishes the public keys. Where the key comes
 * from, in order: `RECEIPT_SIGNING_KEY`; on PGlite on disk, `DATA_DIR/receipt-signing-key` (0600),
 * made once; otherwise (PostgreSQL, or PGlite in memory) a row of `receipt_signing_keys` made once,
 * so every instance on one database signs with one key. Every key used has its public half in that
 * table, which the JWKS lists, so a rotation leaves old receipts verifiable.
 */

/** Where the current private key is kept. */
type KeySource =
  | { readonly kind: "environment" }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "database" }

/** The key file beside PGlite's data. */
export const receiptKeyPath = (dataDir: string) => join(dataDir, "receipt-signing-key")

/** A rotation the service cannot make: the key is the operator's (`RECEIPT_SIGNING_KEY`). */
export class RotationRefused extends Data.TaggedError("RotationRefused")<{ readonly message: string }> {}

export interface Rotated {
  readonly kid: string
  readonly previous_kid: string
  /** Every published kid, newest first. */
  readonly published: ReadonlyArray<string>
}

export interface JsonWebKeySet {
  readonly keys: ReadonlyArray<PublicJwk>
}

/** How long an instance on a shared database signs with a key before it looks for a newer one (ms). */
export const ReceiptKeyRefresh = Context.Reference<number>("metering/ReceiptKeyRefresh", {
  defaultValue: () => 60_000
})

const decodeKeys = Row.decoder(
  Schema.Struct({ kid: Schema.String, public_jwk: Schema.String, private_jwk: Schema.NullOr(Schema.String) }),
  "receipt_signing_keys"
)

const encoder = new TextEncoder()

/** A receipt's signature by `key`: a compact JWS over the canonical JSON of the rest. */
const signatureOf = (key: SigningKey, receipt: object): Promise<string> =>
  new CompactSign(encoder.encode(receiptPayload(receipt)))
    .setProtectedHeader({ alg: receiptSignatureAlg, kid: key.kid })
    .sign(key.privateKey)

/** The receipt with its signature by `key`. */
export const signWith =
  (key: SigningKey) =>
  <A extends object>(receipt: A): Effect.Effect<A & { readonly signature: string }> =>
    Effect.map(
      Effect.promise(() => signatureOf(key, receipt)),
      (signature) => ({ ...receipt, signature })
    )

/** How many signatures are in flight at once (each a job of the crypto thread pool): a bound on what a page holds. */
const signingBatch = 32

/** Receipts with their signatures by `key`, signed `signingBatch` at a time. */
const signAllWith = <A extends object>(key: SigningKey, receipts: ReadonlyArray<A>) =>
  Effect.promise(async () => {
    const signed: Array<A & { readonly signature: string }> = []
    for (let at = 0; at < receipts.length; at += signingBatch) {
      const batch = receipts.slice(at, at + signingBatch)
      const signatures = await Promise.all(batch.map((receipt) => signatureOf(key, receipt)))
      for (const [i, receipt] of batch.entries()) signed.push({ ...receipt, signature: signatures[i]! })
    }
    return signed
  })

export class ReceiptSigner extends Context.Service<
  ReceiptSigner,
  {
    /** The receipt with its `signature`: a compact JWS over its canonical JSON without one. */
    readonly sign: <A extends object>(receipt: A) => Effect.Effect<A & { readonly signature: string }>
    readonly signAll: <A extends object>(
      receipts: ReadonlyArray<A>
    ) => Effect.Effect<ReadonlyArray<A & { readonly signature: string }>>
    /** Every key that ever signed, newest first: only their public halves. */
    readonly jwks: Effect.Effect<JsonWebKeySet, SqlError>
    /** A new current key; the old one stays published. */
    readonly rotate: Effect.Effect<Rotated, SqlError | RotationRefused>
  }
>()("metering/ReceiptSigner") {
  static readonly layerNoDeps = Layer.effect(
    ReceiptSigner,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const fs = yield* FileSystem.FileSystem
      const refreshMs = yield* ReceiptKeyRefresh
      const source: KeySource = Option.isSome(config.receiptSigningKey)
        ? { kind: "environment" }
        : Option.isNone(config.databaseUrl) && config.dataDir !== ":memory:"
          ? { kind: "file", path: receiptKeyPath(config.dataDir) }
          : { kind: "database" }

      /** The public half listed, once; a key listed already stays as it is. */
      const publish = (key: SigningKey) =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) => sql`INSERT INTO receipt_signing_keys (kid, public_jwk, created_at)
            VALUES (${key.kid}, ${JSON.stringify(key.publicJwk)}, ${now}) ON CONFLICT DO NOTHING`
        )

      /** The current key kept in the database, if any. */
      const storedKey = Effect.flatMap(
        sql`SELECT kid, public_jwk, private_jwk FROM receipt_signing_keys
          WHERE private_jwk IS NOT NULL AND retired_at IS NULL`,
        decodeKeys
      ).pipe(Effect.map((rows) => rows[0]))

      /** The database's key, made and stored first when it has none (one insert wins a race). */
      const databaseKey = Effect.gen(function* () {
        const found = yield* storedKey
        if (found?.private_jwk != null) return yield* signingKeyOf(found.private_jwk, "receipt_signing_keys")
        const privateJwk = newPrivateJwk()
        const made = yield* signingKeyOf(privateJwk, "a new key")
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO receipt_signing_keys (kid, public_jwk, private_jwk, created_at)
          VALUES (${made.kid}, ${JSON.stringify(made.publicJwk)}, ${privateJwk}, ${now}) ON CONFLICT DO NOTHING`
        const winner = yield* storedKey
        if (winner?.private_jwk == null)
          return yield* Effect.die(new Error("no receipt signing key was stored"))
        return winner.kid === made.kid
          ? made
          : yield* signingKeyOf(winner.private_jwk, "receipt_signing_keys")
      })

      /** The file's key, the file made first (0600, exclusively) when there is none. */
      const fileKey = (path: string) =>
        Effect.gen(function* () {
          const read = fs.readFileString(path).pipe(
            Effect.map(Option.some),
            Effect.catchReason("PlatformError", "NotFound", () => Effect.succeedNone)
          )
          const existing = yield* read
          if (Option.isSome(existing)) return yield* signingKeyOf(existing.value, path)
          yield* fs.makeDirectory(join(path, ".."), { recursive: true })
          yield* fs
            .writeFileString(path, `${newPrivateJwk()}\n`, { flag: "wx", mode: 0o600 })
            .pipe(Effect.catchReason("PlatformError", "AlreadyExists", () => Effect.void))
          const made = yield* read
          return Option.isSome(made)
            ? yield* signingKeyOf(made.value, path)
            : yield* Effect.die(new Error(`${path} could not be read back`))
        }).pipe(Effect.orDie)

      const load = (): Effect.Effect<SigningKey, SqlError> => {
        switch (source.kind) {
          case "environment":
            return signingKeyOf(
              Redacted.value(Option.getOrThrow(config.receiptSigningKey)),
              "RECEIPT_SIGNING_KEY"
            )
          case "file":
            return fileKey(source.path)
          case "database":
            return databaseKey
        }
      }

      let current = yield* load().pipe(Effect.orDie)
      yield* publish(current).pipe(Effect.orDie)
      let checkedAt = yield* Clock.currentTimeMillis
      yield* Effect.logInfo(
        `receipts: signing with key ${current.kid} from ${
          source.kind === "environment"
            ? "RECEIPT_SIGNING_KEY"
            : source.kind === "file"
              ? source.path
              : "the database (receipt_signing_keys)"
        }`
      )

      /** The key to sign with; on a shared database, a rotation made by another instance is seen within a minute. */
      const signingKey = Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (source.kind !== "database" || now - checkedAt < refreshMs) return Effect.succeed(current)
        checkedAt = now
        return storedKey.pipe(
          Effect.flatMap((row) =>
            row?.private_jwk == null || row.kid === current.kid
              ? Effect.succeed(current)
              : signingKeyOf(row.private_jwk, "receipt_signing_keys")
          ),
          Effect.tap((key) =>
            Effect.sync(() => {
              current = key
            })
          ),
          Effect.catch((error) =>
            Effect.as(Effect.logWarning("receipts: could not look for a newer signing key", error), current)
          )
        )
      })

      const sign = <A extends object>(receipt: A) =>
        Effect.flatMap(signingKey, (key) => signWith(key)(receipt))

      const signAll = <A extends object>(receipts: ReadonlyArray<A>) =>
        receipts.length === 0
          ? Effect.succeed([])
          : Effect.flatMap(signingKey, (key) => signAllWith(key, receipts))

      const jwks = Effect.map(
        Effect.flatMap(
          sql`SELECT kid, public_jwk, NULL AS private_jwk FROM receipt_signing_keys ORDER BY created_at DESC, kid`,
          decodeKeys
        ),
        (rows) => ({ keys: rows.map((row) => publicOnly(JSON.parse(row.public_jwk) as PublicJwk)) })
      )

      const rotate = Effect.gen(function* () {
        if (source.kind === "environment")
          return yield* new RotationRefused({
            message:
              "The receipt signing key is RECEIPT_SIGNING_KEY: set a new one on every instance and restart them; the old public key stays published."
          })
        const previous = current
        const privateJwk = newPrivateJwk()
        const next = yield* signingKeyOf(privateJwk, "a new key")
        if (source.kind === "file") {
          // The file first: a crash after it leaves the new key in use, published at the next start.
          const staged = `${source.path}.next`
          yield* fs.writeFileString(staged, `${privateJwk}\n`, { mode: 0o600 }).pipe(Effect.orDie)
          yield* fs.rename(staged, source.path).pipe(Effect.orDie)
        }
        const now = yield* Clock.currentTimeMillis
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE receipt_signing_keys SET retired_at = ${now}, private_jwk = NULL WHERE retired_at IS NULL`
            yield* sql`INSERT INTO receipt_signing_keys (kid, public_jwk, private_jwk, created_at)
              VALUES (${next.kid}, ${JSON.stringify(next.publicJwk)}, ${source.kind === "database" ? privateJwk : null}, ${now})`
          })
        )
        current = next
        checkedAt = now
        yield* Effect.logInfo(`receipts: rotated the signing key from ${previous.kid} to ${next.kid}`)
        const published = yield* jwks
        return { kid: next.kid, previous_kid: previous.kid, published: published.keys.map((key) => key.kid) }
      })

      return ReceiptSigner.of({ sign, signAll, jwks, rotate })
    })
  )

  static readonly layer = ReceiptSigner.layerNoDeps.pipe(Layer.provide(NodeFileSystem.layer))
}

/**
 * A data answer with its receipt signed, for a caller who asked (REST's `Prefer:
 * receipt-signature`, MCP's `_meta`): the envelope and its JSON carry the signed receipt. Only a
 * caller who asks pays for it; a problem has no receipt and stays as it is.
 */
export const signedAnswer =
  (signer: ReceiptSigner["Service"]) =>
  <E>(metered: Metered<E>): Effect.Effect<Metered<E>> => {
    const { result } = metered
    if (result._tag === "Failure") return Effect.succeed(metered)
    const outcome = result.success
    return Effect.map(signer.sign(outcome.receipt), (signed) => ({
      ...metered,
      result: Result.succeed(signedOutcome(outcome, signed))
    }))
  }

const signedOutcome = (outcome: CallOutcome, signed: Receipt): CallOutcome => ({
  envelope: { ...outcome.envelope, receipt: signed },
  receipt: signed,
  replayed: outcome.replayed,
  ...(outcome.json === undefined ? {} : { json: withSignedReceipt(outcome.json, outcome.receipt, signed) }),
  ...(outcome.remaining === undefined ? {} : { remaining: outcome.remaining })
})
