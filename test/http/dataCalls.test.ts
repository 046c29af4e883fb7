import { readFileSync } from "node:fs"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { Keys } from "../../src/services/Keys.ts"
import { makeWorld } from "../../src/upstream/world/index.ts"
import { type Reply, TestApp, testApp, testSeed } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/**
 * Every shape of a REST data call, success and refusal, answered as recorded in
 * `dataCalls.golden.json`. The answers were recorded from the router of the HttpApi (with its
 * bearer, input-problem and plain-input middleware) before data calls got their one route, and the
 * data lane answered every one of them the same: a refactoring of the REST wire must keep them.
 */
const golden = JSON.parse(
  readFileSync(new URL("./dataCalls.golden.json", import.meta.url), "utf8").replace(
    /acct_[0-9A-Za-z]+/g,
    "acct_*"
  )
) as ReadonlyArray<{
  readonly name: string
  readonly first: unknown
  readonly again?: unknown
}>

const world = makeWorld(testSeed)
const person = (() => {
  const page = world.searchPeople({ keywords: "engineer" }, undefined, 30)
  if (page === "invalid_cursor") throw new Error("unexpected")
  return page.items.find((item) => !item.is_anonymous && item.public_identifier !== null)!.public_identifier!
})()

/** What may differ between two equal answers: ids, times, and what the first call's charge changed. */
const normalised = (reply: Reply) => {
  const text = JSON.stringify(reply.body)
    .replace(/rcpt_[0-9A-Za-z]+/g, "rcpt_*")
    .replace(/acct_[0-9A-Za-z]+/g, "acct_*")
    .replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"<time>"')
    .replace(/"cache_age_seconds":\d+/g, '"cache_age_seconds":0')
    .replace(/"idempotency_key":"lane-test-\d+-0000"/g, '"idempotency_key":"<key>"')
    .replace(/"(charged|refunded|balance|grant|free_tier|credits_available)":\d+/g, '"$1":0')
  const headers = [
    "content-type",
    "cache-control",
    "retry-after",
    "www-authenticate",
    "idempotent-replayed",
    "allow"
  ]
  return {
    status: reply.status,
    headers: Object.fromEntries(headers.map((name) => [name, reply.headers.get(name)])),
    body: JSON.parse(text) as unknown
  }
}

describe(`REST data calls, every shape (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("every shape of success and refusal answers as recorded", () =>
      Effect.gen(function* () {
        const lane = yield* TestApp
        const admin = yield* Admin
        const keys = yield* Keys
        const paid = yield* lane.mint("10.61.0.1")
        yield* admin.setPlan(paid.account_id, "production")
        yield* admin.credit(paid.account_id, 100_000, "balance", "test purchase")
        const trial = yield* lane.mint("10.61.0.2")
        const revoked = yield* lane.mint("10.61.0.3")
        const [revokedKey] = yield* keys.list(revoked.account_id)
        yield* keys.revoke(revoked.account_id, revokedKey!.key_id)
        const suspended = yield* lane.mint("10.61.0.4")
        yield* admin.setState(suspended.account_id, "suspended")
        const unentitled = yield* lane.mint("10.61.0.5")
        yield* admin.entitle(unentitled.account_id, ["forum"])

        const profile = `/v1/profnet/profiles?identifier=${person}`
        let n = 0
        const fresh = () => `lane-test-${++n}-0000`
        type Case = readonly [string, string, Record<string, string>?]
        const cases: ReadonlyArray<Case> = [
          ["paid, a call", profile, { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }],
          [
            "paid, sections",
            `${profile}&sections=about,skills`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          ["paid, no Idempotency-Key", profile, { authorization: `Bearer ${paid.key}` }],
          [
            "paid, short Idempotency-Key",
            profile,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "short" }
          ],
          [
            "paid, bogus section",
            `${profile}&sections=bogus`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, max_credits too low",
            `${profile}&max_credits=1`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, max_credits not a number",
            `${profile}&max_credits=abc`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, bad freshness",
            `${profile}&freshness=soon`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, realtime",
            `${profile}&freshness=realtime`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, unknown parameter",
            `${profile}&colour=red`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, repeated parameter",
            `${profile}&identifier=${person}`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, empty identifier",
            "/v1/profnet/profiles?identifier=",
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, identifier without =",
            "/v1/profnet/profiles?identifier",
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, no query",
            "/v1/profnet/profiles",
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, control character",
            "/v1/profnet/profiles?identifier=a%01b",
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, control character in a name",
            `${profile}&x%07=1`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, escapes and plus",
            `/v1/profnet/search?keywords=site+reliability%20engineer&limit=5`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, bad escape",
            `/v1/profnet/search?keywords=%E0%A4%A&limit=5`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, search limit out of range",
            `/v1/profnet/search?keywords=x&limit=500`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, resolve an encoded URL",
            `/v1/profnet/resolve-url?url=${encodeURIComponent(`https://www.profnet.com/in/${person}/?utm_source=x`)}`,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, forum search",
            "/v1/forum/search?query=python&type=posts&sort=top",
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, lower-case scheme and spaces",
            profile,
            { authorization: `bearer    ${paid.key}`, "idempotency-key": "@fresh" }
          ],
          [
            "paid, a body announced too large",
            profile,
            { authorization: `Bearer ${paid.key}`, "idempotency-key": "@fresh", "content-length": "99999999" }
          ],
          ["trial, a call", profile, { authorization: `Bearer ${trial.key}` }],
          ["trial, realtime", `${profile}&freshness=realtime`, { authorization: `Bearer ${trial.key}` }],
          [
            "trial, a cursor",
            `/v1/profnet/search?keywords=engineer&cursor=abc`,
            { authorization: `Bearer ${trial.key}` }
          ],
          [
            "trial, a large search",
            `/v1/profnet/search?keywords=engineer&limit=25`,
            { authorization: `Bearer ${trial.key}` }
          ],
          ["unknown key", profile, { authorization: "Bearer svc_0000000000000000000000000000000000000000" }],
          ["not a key", profile, { authorization: "Bearer nope" }],
          ["revoked key", profile, { authorization: `Bearer ${revoked.key}` }],
          ["suspended account", profile, { authorization: `Bearer ${suspended.key}` }],
          ["not entitled", profile, { authorization: `Bearer ${unentitled.key}` }],
          ["no key (the router's)", profile, {}],
          ["a Basic credential (the router's)", profile, { authorization: "Basic dXNlcjpwYXNz" }]
        ]
        assert.deepStrictEqual(
          cases.map(([name]) => name),
          golden.map((entry) => entry.name)
        )
        for (const [index, [name, path, given = {}]] of cases.entries()) {
          const headers = Object.fromEntries(
            Object.entries(given).map(([header, value]) => [header, value === "@fresh" ? fresh() : value])
          )
          const answer = normalised(yield* lane.call(path, { headers, ip: "10.61.9.9" }))
          assert.deepStrictEqual(answer, golden[index]!.first, name)
          // Again with a key of its own (a cached copy answers now).
          if (headers["idempotency-key"] !== undefined) {
            const again = { ...headers, "idempotency-key": fresh() }
            const answerAgain = normalised(yield* lane.call(path, { headers: again, ip: "10.61.9.9" }))
            assert.deepStrictEqual(answerAgain, golden[index]!.again, `${name}, a fresh key`)
          }
        }
      })
    )
  })
})
