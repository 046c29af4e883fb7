import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import fc from "fast-check"
import { verifyReceipt } from "../../src/clients/sdk/index.ts"
import { signWith } from "../../src/metering/ReceiptSigner.ts"
import { newPrivateJwk, signingKeyOf } from "../../src/metering/signingKeys.ts"

/** Receipts of every shape the service makes: refunds or none, a key or none, an app or none. */
const receiptArbitrary = fc.record(
  {
    id: fc.string({ minLength: 1, maxLength: 30 }).map((s) => `rcpt_${s}`),
    operation: fc.constantFrom("getProfile", "forumSearch", "getTweet", "resolveUrl"),
    quoted: fc.nat({ max: 10_000 }),
    charged: fc.nat({ max: 10_000 }),
    refunds: fc.array(
      fc.record({
        reason: fc.constantFrom("realtime_fallback", "domain_resolved_before", "fewer_results"),
        credits: fc.nat({ max: 100 })
      }),
      { maxLength: 3 }
    ),
    funding: fc.record({ free_tier: fc.nat(), grant: fc.nat(), balance: fc.nat() }),
    idempotency_key: fc.option(fc.string({ maxLength: 40 }), { nil: null }),
    replayed: fc.boolean(),
    created_at: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
    app_id: fc.string({ minLength: 1, maxLength: 20 }).map((s) => `app_${s}`),
    key_id: fc.string({ minLength: 1, maxLength: 20 }).map((s) => `key_${s}`)
  },
  {
    requiredKeys: [
      "id",
      "operation",
      "quoted",
      "charged",
      "refunds",
      "funding",
      "idempotency_key",
      "replayed",
      "created_at"
    ]
  }
)

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Another value than `value`, of any kind: the change a forger would make to one field. */
const changedValue = (value: Json): fc.Arbitrary<Json> =>
  fc
    .oneof(
      fc.integer(),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      typeof value === "number"
        ? fc.integer({ min: -3, max: 3 }).map((d) => value + (d === 0 ? 1 : d))
        : fc.integer(),
      typeof value === "string"
        ? fc.string({ minLength: 1, maxLength: 2 }).map((s) => `${value}${s}`)
        : fc.string(),
      fc.constant(JSON.stringify(value))
    )
    .filter((next) => JSON.stringify(next) !== JSON.stringify(value))

/** Every path to a value inside a receipt (its members, its funding's, each refund's). */
const pathsOf = (
  value: Json,
  path: ReadonlyArray<string | number> = []
): Array<ReadonlyArray<string | number>> => {
  if (value === null || typeof value !== "object") return [path]
  const entries: Array<[string | number, Json]> = Array.isArray(value)
    ? value.map((item, i) => [i, item] as [number, Json])
    : Object.entries(value as Record<string, Json>)
  return [path, ...entries.flatMap(([key, item]) => pathsOf(item, [...path, key]))]
}

const updated = (
  value: Json,
  path: ReadonlyArray<string | number>,
  change: (old: Json) => Json | undefined
): Json => {
  if (path.length === 0) return change(value) as Json
  const [head, ...rest] = path
  if (Array.isArray(value)) {
    const copy = [...value]
    const next = updated(copy[head as number]!, rest, change)
    if (rest.length === 0 && next === undefined) copy.splice(head as number, 1)
    else copy[head as number] = next
    return copy
  }
  const copy = { ...(value as Record<string, Json>) }
  const next = updated(copy[head as string]!, rest, change)
  if (next === undefined) delete copy[head as string]
  else copy[head as string] = next
  return copy
}

/** One change to one field: a new value, the field removed, or a field added beside it. */
const alteration = (receipt: Json) =>
  fc
    .constantFrom(...pathsOf(receipt).filter((path) => path.length > 0 && path[0] !== "signature"))
    .chain((path) =>
      fc.oneof(
        fc.constant({ path, change: () => undefined as Json | undefined, what: "removed" }),
        changedValue(pathValue(receipt, path)).map((next) => ({ path, change: () => next, what: "changed" })),
        fc.constant({
          path: path.slice(0, -1),
          change: (old: Json) =>
            Array.isArray(old)
              ? [...old, 0]
              : old !== null && typeof old === "object"
                ? { ...old, extra: 1 }
                : old,
          what: "added"
        })
      )
    )

const pathValue = (value: Json, path: ReadonlyArray<string | number>): Json =>
  path.reduce<Json>((at, key) => (at as Record<string | number, Json>)[key]!, value)

describe("verifyReceipt", () => {
  it.effect("every receipt signed verifies; every single-field change makes it fail", () =>
    Effect.gen(function* () {
      const key = yield* signingKeyOf(newPrivateJwk(), "a test key")
      const jwks = { keys: [key.publicJwk] }
      const sign = signWith(key)
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            receiptArbitrary.chain((receipt) => fc.tuple(fc.constant(receipt), alteration(receipt as Json))),
            async ([receipt, { path, change, what }]) => {
              const signed = await Effect.runPromise(sign(receipt))
              const verdict = await verifyReceipt(signed, jwks)
              if (!verdict.valid) throw new Error(`a signed receipt does not verify: ${verdict.message}`)
              const altered = updated(signed as unknown as Json, path, change)
              if (JSON.stringify(altered) === JSON.stringify(signed)) return
              const result = await verifyReceipt(altered, jwks)
              if (result.valid) throw new Error(`${what} ${path.join(".")} still verifies`)
            }
          ),
          { numRuns: 300 }
        )
      )
    })
  )

  it.effect("says why: unsigned, malformed, another key, a forged signature", () =>
    Effect.gen(function* () {
      const key = yield* signingKeyOf(newPrivateJwk(), "a test key")
      const other = yield* signingKeyOf(newPrivateJwk(), "another test key")
      const jwks = { keys: [key.publicJwk] }
      const receipt = { id: "rcpt_1", operation: "getProfile", charged: 4 }
      const signed = yield* signWith(key)(receipt)
      const foreign = yield* signWith(other)(receipt)
      const check = (value: unknown) => Effect.promise(() => verifyReceipt(value, jwks))
      assert.deepStrictEqual(yield* check(signed), { valid: true, kid: key.kid })
      assert.deepInclude(yield* check(receipt), { valid: false, reason: "unsigned" })
      assert.deepInclude(yield* check({ ...receipt, signature: "not.a.jws" }), {
        valid: false,
        reason: "malformed"
      })
      assert.deepInclude(yield* check(foreign), { valid: false, reason: "unknown_key" })
      // The other key's signature under this key's kid.
      const [, payload, sig] = foreign.signature.split(".")
      const [header] = signed.signature.split(".")
      assert.deepInclude(yield* check({ ...receipt, signature: `${header}.${payload}.${sig}` }), {
        valid: false,
        reason: "bad_signature"
      })
      // Key order and spacing are not the receipt: the canonical form is.
      const reordered = Object.fromEntries(Object.entries(signed).reverse())
      assert.isTrue((yield* check(reordered)).valid)
    })
  )

  it.effect("a bad RECEIPT_SIGNING_KEY stops the start naming it, never echoing it", () =>
    Effect.gen(function* () {
      const secret = "c2VjcmV0LXByaXZhdGUta2V5LW1hdGVyaWFsLTEyMzQ"
      for (const text of [`{"kty":"OKP","crv":"X25519","d":"${secret}"}`, `{"d":"${secret}"`, secret]) {
        const exit = yield* Effect.exit(signingKeyOf(text, "RECEIPT_SIGNING_KEY"))
        assert.isTrue(Exit.isFailure(exit))
        const shown = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
        assert.include(shown, "RECEIPT_SIGNING_KEY is not an Ed25519 private JWK")
        assert.notInclude(shown, secret)
      }
      // The kid is the public key's thumbprint whichever `x` the text claims.
      const jwk = JSON.parse(newPrivateJwk())
      const honest = yield* signingKeyOf(JSON.stringify(jwk), "a key")
      const lying = yield* signingKeyOf(JSON.stringify({ ...jwk, x: "AAAA" }), "a key")
      assert.strictEqual(lying.kid, honest.kid)
      assert.strictEqual(lying.publicJwk.x, jwk.x)
    })
  )
})
