import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeFor, codeIn, latestMail, linkTokenIn, mailTo, post, postRaw, signIn } from "./support.ts"

const freshIp = ipSequence("10.62")

const otherCode = (code: string) => (code === "000000" ? "111111" : "000000")

/** Every management and session route, as (method, path, body). */
const managementRoutes: ReadonlyArray<readonly [string, string, unknown]> = [
  ["GET", "/v1/keys", undefined],
  ["POST", "/v1/keys", { label: "x" }],
  ["POST", "/v1/keys/rotate", { key_id: "key_x" }],
  ["POST", "/v1/keys/revoke", { key_id: "key_x" }],
  ["POST", "/v1/alert", { threshold: 10 }],
  ["GET", "/v1/auth/tokens", undefined],
  ["POST", "/v1/auth/tokens/revoke", { token_id: "mtok_x" }],
  ["POST", "/v1/auth/logout", {}]
]

const callRoute = (
  app: TestApp["Service"],
  [method, path, body]: readonly [string, string, unknown],
  options: { key?: string; ip?: string }
) => (method === "GET" ? app.call(path, options) : post(app, path, body, options))

describe(`identity routes and their errors (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("start and verify: malformed email, missing email or code, malformed JSON", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        for (const email of [
          "not-an-email",
          "a@b",
          "two@@example.com",
          " ",
          `${"x".repeat(250)}@example.com`
        ]) {
          const reply = yield* post(app, "/v1/auth/email/start", { email }, { ip })
          assert.strictEqual(reply.status, 400, email)
          assert.strictEqual(reply.body.code, "INVALID_INPUT", email)
          assert.strictEqual(reply.body.param, "email", email)
        }
        const noEmail = yield* post(app, "/v1/auth/email/start", {}, { ip })
        assert.strictEqual(noEmail.status, 400)
        assert.strictEqual(noEmail.body.code, "INVALID_INPUT")

        const missingCode = yield* post(app, "/v1/auth/email/verify", { email: "a@example.com" }, { ip })
        assert.strictEqual(missingCode.status, 400)
        assert.strictEqual(missingCode.body.code, "INVALID_INPUT")
        assert.strictEqual(missingCode.body.param, "code")
        const missingEmail = yield* post(app, "/v1/auth/email/verify", { code: "123456" }, { ip })
        assert.strictEqual(missingEmail.status, 400)
        assert.strictEqual(missingEmail.body.param, "email")
        const badEmail = yield* post(app, "/v1/auth/email/verify", { email: "nope", code: "123456" }, { ip })
        assert.strictEqual(badEmail.status, 400)
        assert.strictEqual(badEmail.body.param, "email")
        const shortCode = yield* post(
          app,
          "/v1/auth/email/verify",
          { email: "a@example.com", code: "12345" },
          { ip }
        )
        assert.strictEqual(shortCode.status, 400)
        assert.strictEqual(shortCode.body.param, "code")

        for (const path of ["/v1/auth/email/start", "/v1/auth/email/verify", "/v1/recover", "/v1/rekey"]) {
          const malformed = yield* postRaw(app, path, '{"email": "a@example.com"', { ip })
          assert.strictEqual(malformed.status, 400, path)
          assert.match(malformed.headers.get("content-type") ?? "", /problem\+json/, path)
          assert.strictEqual(malformed.body.code, "INVALID_INPUT", path)
        }
        // No start was accepted: no mail went anywhere.
        assert.deepStrictEqual(yield* mailTo("a@example.com"), [])
      })
    )

    it.effect(
      "a wrong, used or superseded code is UNAUTHORIZED; the link is single-use and ends the code",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const email = "codes@example.com"
          const verify = (body: unknown) => post(app, "/v1/auth/email/verify", body, { ip })

          const first = yield* codeFor(app, email, { ip })
          const wrong = yield* verify({ email, code: otherCode(first.code) })
          assert.strictEqual(wrong.status, 401)
          assert.strictEqual(wrong.body.code, "UNAUTHORIZED")
          // A newer start supersedes the older code and link.
          const second = yield* codeFor(app, email, { ip })
          if (second.code !== first.code) {
            const stale = yield* verify({ email, code: first.code })
            assert.strictEqual(stale.status, 401)
            assert.strictEqual(stale.body.code, "UNAUTHORIZED")
          }
          const staleLink = yield* verify({ token: first.token })
          assert.strictEqual(staleLink.status, 401)
          assert.strictEqual(staleLink.body.code, "UNAUTHORIZED")

          const ok = yield* verify({ email: "  CODES@Example.com ", code: second.code })
          assert.strictEqual(ok.status, 200, JSON.stringify(ok.body))
          assert.strictEqual(ok.body.email, email)
          assert.match(ok.body.management_token, /^svcm_/)
          const used = yield* verify({ email, code: second.code })
          assert.strictEqual(used.status, 401)
          assert.strictEqual(used.body.code, "UNAUTHORIZED")
          // The link of a sign-in finished by its code is used too.
          const usedLink = yield* verify({ token: second.token })
          assert.strictEqual(usedLink.status, 401)

          // The link: works once, and then the code of the same sign-in is dead as well.
          const third = yield* codeFor(app, email, { ip })
          const byLink = yield* verify({ token: third.token })
          assert.strictEqual(byLink.status, 200, JSON.stringify(byLink.body))
          assert.strictEqual(byLink.body.email, email)
          assert.notStrictEqual(byLink.body.management_token, ok.body.management_token)
          const linkAgain = yield* verify({ token: third.token })
          assert.strictEqual(linkAgain.status, 401)
          assert.strictEqual(linkAgain.body.code, "UNAUTHORIZED")
          const codeAfterLink = yield* verify({ email, code: third.code })
          assert.strictEqual(codeAfterLink.status, 401)
          const garbageLink = yield* verify({ token: "x".repeat(43) })
          assert.strictEqual(garbageLink.status, 401)
          const shortLink = yield* verify({ token: "abc" })
          assert.strictEqual(shortLink.status, 401)
        })
    )

    it.effect(
      "a code takes 5 wrong tries from one IP; a right code before then works, and the link still works after",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const email = "five@example.com"
          const verify = (body: unknown) => post(app, "/v1/auth/email/verify", body, { ip })
          const survivor = yield* codeFor(app, email, { ip })
          for (let i = 0; i < 4; i++)
            assert.strictEqual((yield* verify({ email, code: otherCode(survivor.code) })).status, 401)
          assert.strictEqual((yield* verify({ email, code: survivor.code })).status, 200)

          const doomed = yield* codeFor(app, email, { ip })
          for (let i = 0; i < 5; i++)
            assert.strictEqual((yield* verify({ email, code: otherCode(doomed.code) })).status, 401)
          const late = yield* verify({ email, code: doomed.code })
          assert.strictEqual(late.status, 401)
          assert.strictEqual(late.body.code, "UNAUTHORIZED")
          // The link counts no tries (it cannot be guessed): wrong codes never stop it.
          const byLink = yield* verify({ token: doomed.token })
          assert.strictEqual(byLink.status, 200, JSON.stringify(byLink.body))
        })
    )

    it.effect("management routes: no bearer or a spend key is AUTH_REQUIRED, a bad svcm_ UNAUTHORIZED", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const minted = yield* app.mint(ip)
        const person = yield* signIn(app, "guard@example.com", { ip })
        const revokedToken = (yield* signIn(app, "guard@example.com", { ip })).management_token
        const logout = yield* post(app, "/v1/auth/logout", {}, { key: revokedToken, ip })
        assert.strictEqual(logout.status, 200)
        for (const route of managementRoutes) {
          const what = `${route[0]} ${route[1]}`
          const none = yield* callRoute(app, route, { ip })
          assert.strictEqual(none.status, 401, what)
          assert.strictEqual(none.body.code, "AUTH_REQUIRED", what)
          const spendKey = yield* callRoute(app, route, { key: minted.key, ip })
          assert.strictEqual(spendKey.status, 401, what)
          assert.strictEqual(spendKey.body.code, "AUTH_REQUIRED", what)
          for (const token of [revokedToken, `svcm_${"A".repeat(32)}`]) {
            const refused = yield* callRoute(app, route, { key: token, ip })
            assert.strictEqual(refused.status, 401, what)
            assert.strictEqual(refused.body.code, "UNAUTHORIZED", what)
          }
        }
        // The live token of the same email still works after the other one's logout.
        const listed = yield* app.call("/v1/keys", { key: person.management_token, ip })
        assert.strictEqual(listed.status, 200, JSON.stringify(listed.body))
        assert.deepStrictEqual(listed.body.keys, [])
        // A revoked management token does not spend on data routes either.
        const data = yield* app.call("/v1/usage", { key: revokedToken, ip })
        assert.strictEqual(data.status, 401)
        assert.strictEqual(data.body.code, "UNAUTHORIZED")
      })
    )

    it.effect("another account's key id is NOT_FOUND exactly like an unknown one", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const alice = yield* signIn(app, "alice@example.com", { ip })
        const bob = yield* signIn(app, "bob@example.com", { ip })
        const bobKey = yield* post(app, "/v1/keys", { label: "bob" }, { key: bob.management_token, ip })
        assert.strictEqual(bobKey.status, 201)
        const aliceKey = yield* post(app, "/v1/keys", { label: "alice" }, { key: alice.management_token, ip })
        assert.strictEqual(aliceKey.status, 201)
        for (const path of ["/v1/keys/rotate", "/v1/keys/revoke"]) {
          const foreign = yield* post(
            app,
            path,
            { key_id: bobKey.body.key_id },
            { key: alice.management_token, ip }
          )
          const unknown = yield* post(
            app,
            path,
            { key_id: "key_doesnotexist" },
            { key: alice.management_token, ip }
          )
          assert.strictEqual(foreign.status, 404, path)
          assert.strictEqual(foreign.body.code, "NOT_FOUND", path)
          assert.strictEqual(foreign.body.param, "key_id", path)
          assert.strictEqual(unknown.status, 404, path)
          // The same words, with only the id changed: nothing hints that Bob's key exists.
          assert.strictEqual(
            foreign.body.message.replace(bobKey.body.key_id, "ID"),
            unknown.body.message.replace("key_doesnotexist", "ID"),
            path
          )
          assert.deepStrictEqual(Object.keys(foreign.body).sort(), Object.keys(unknown.body).sort(), path)
        }
        // Bob's key still works, unrotated.
        assert.strictEqual((yield* app.call("/v1/usage", { key: bobKey.body.key, ip })).status, 200)
        // Rotating a revoked key of one's own is NOT_FOUND; revoking it again answers the revocation.
        const revoked = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: aliceKey.body.key_id },
          { key: alice.management_token, ip }
        )
        assert.strictEqual(revoked.status, 200)
        const again = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: aliceKey.body.key_id },
          { key: alice.management_token, ip }
        )
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.body.revoked_at, revoked.body.revoked_at)
        const rotateRevoked = yield* post(
          app,
          "/v1/keys/rotate",
          { key_id: aliceKey.body.key_id },
          { key: alice.management_token, ip }
        )
        assert.strictEqual(rotateRevoked.status, 404)
        assert.strictEqual(rotateRevoked.body.param, "key_id")
        const listed = yield* app.call("/v1/keys", { key: alice.management_token, ip })
        assert.deepStrictEqual(
          listed.body.keys.map((key: any) => [key.key_id, key.label, key.revoked_at !== null]),
          [[aliceKey.body.key_id, "alice", true]]
        )
        assert.isFalse(JSON.stringify(listed.body).includes(aliceKey.body.key), "never the secret")
      })
    )

    it.effect("label and threshold are checked: INVALID_INPUT with their param", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const token = (yield* signIn(app, "checks@example.com", { ip })).management_token
        for (const label of ["x".repeat(65), "", 7]) {
          const reply = yield* post(app, "/v1/keys", { label }, { key: token, ip })
          assert.strictEqual(reply.status, 400, String(label))
          assert.strictEqual(reply.body.code, "INVALID_INPUT")
          assert.strictEqual(reply.body.param, "label")
        }
        const longest = yield* post(app, "/v1/keys", { label: "y".repeat(64) }, { key: token, ip })
        assert.strictEqual(longest.status, 201, JSON.stringify(longest.body))
        assert.strictEqual(longest.body.label, "y".repeat(64))
        for (const threshold of [-1, 1.5, "10", null, 2 ** 60]) {
          const reply = yield* post(app, "/v1/alert", { threshold }, { key: token, ip })
          assert.strictEqual(reply.status, 400, String(threshold))
          assert.strictEqual(reply.body.code, "INVALID_INPUT")
          assert.strictEqual(reply.body.param, "threshold", String(threshold))
        }
        const missing = yield* post(app, "/v1/alert", {}, { key: token, ip })
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.body.param, "threshold")
        const off = yield* post(app, "/v1/alert", { threshold: 0 }, { key: token, ip })
        assert.strictEqual(off.status, 200)
        assert.strictEqual(off.body.threshold, 0)
        const malformed = yield* postRaw(app, "/v1/keys", "{label:", { key: token, ip })
        assert.strictEqual(malformed.status, 400)
        assert.strictEqual(malformed.body.code, "INVALID_INPUT")
        const missingKeyId = yield* post(app, "/v1/keys/rotate", {}, { key: token, ip })
        assert.strictEqual(missingKeyId.status, 400)
        assert.strictEqual(missingKeyId.body.param, "key_id")
      })
    )

    it.effect("tokens: list marks the current one, revoke stops one at once, logout the bearer's own", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const email = "tokens@example.com"
        const one = yield* signIn(app, email, { ip })
        const two = yield* signIn(app, email, { ip })
        const three = yield* signIn(app, email, { ip })
        const other = yield* signIn(app, "someone-else@example.com", { ip })
        const listed = yield* app.call("/v1/auth/tokens", { key: two.management_token, ip })
        assert.strictEqual(listed.status, 200, JSON.stringify(listed.body))
        assert.strictEqual(listed.body.email, email)
        assert.deepStrictEqual(
          listed.body.tokens.map((token: any) => [token.token_id, token.label, token.current]),
          [
            [one.token_id, "web", false],
            [two.token_id, "web", true],
            [three.token_id, "web", false]
          ]
        )
        assert.isFalse(JSON.stringify(listed.body).includes(one.management_token.slice(5)))

        // Another email's token id is NOT_FOUND, and stays alive.
        const foreign = yield* post(
          app,
          "/v1/auth/tokens/revoke",
          { token_id: other.token_id },
          { key: two.management_token, ip }
        )
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.body.param, "token_id")
        assert.strictEqual((yield* app.call("/v1/keys", { key: other.management_token, ip })).status, 200)

        const revoked = yield* post(
          app,
          "/v1/auth/tokens/revoke",
          { token_id: one.token_id },
          { key: two.management_token, ip }
        )
        assert.strictEqual(revoked.status, 200, JSON.stringify(revoked.body))
        assert.strictEqual(revoked.body.token_id, one.token_id)
        const dead = yield* app.call("/v1/keys", { key: one.management_token, ip })
        assert.strictEqual(dead.status, 401)
        assert.strictEqual(dead.body.code, "UNAUTHORIZED")

        const logout = yield* post(app, "/v1/auth/logout", {}, { key: three.management_token, ip })
        assert.strictEqual(logout.status, 200)
        assert.strictEqual(logout.body.token_id, three.token_id)
        assert.strictEqual(
          (yield* app.call("/v1/auth/tokens", { key: three.management_token, ip })).status,
          401
        )
        const left = yield* app.call("/v1/auth/tokens", { key: two.management_token, ip })
        assert.deepStrictEqual(
          left.body.tokens.map((token: any) => token.token_id),
          [two.token_id]
        )
      })
    )

    it.effect("one email governing two accounts: AUTH_REQUIRED lists them; account_id in body or query", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const email = "two-accounts@example.com"
        const fresh = yield* signIn(app, email, { ip })
        assert.strictEqual(fresh.accounts.length, 1)
        const trialAccount = fresh.accounts[0]!.account_id
        assert.strictEqual(fresh.accounts[0]!.plan, "trial")
        assert.strictEqual(fresh.accounts[0]!.balance_credits, 0)
        assert.strictEqual(fresh.grant_credits, 0)

        const minted = yield* app.mint(ip)
        const claim = yield* signIn(app, email, { key: minted.key, ip })
        assert.strictEqual(claim.claimed, minted.account_id)
        assert.strictEqual(claim.grant_credits, 10_000)
        const both = [trialAccount, minted.account_id].sort()
        assert.deepStrictEqual(claim.accounts.map((account) => account.account_id).sort(), both)
        const token = claim.management_token
        // The older token of the same email sees both accounts too.
        for (const bearer of [token, fresh.management_token]) {
          const ask = yield* app.call("/v1/keys", { key: bearer, ip })
          assert.strictEqual(ask.status, 401)
          assert.strictEqual(ask.body.code, "AUTH_REQUIRED")
          assert.deepStrictEqual([...ask.body.account_ids].sort(), both)
          // Not "sign in": the token is a management token; it only lacks the account to act on.
          assert.match(
            ask.body.message,
            /^This management token governs 2 accounts \(acct_[^)]+\): send `account_id`/
          )
          for (const id of both) assert.include(ask.body.message, id)
          assert.strictEqual(ask.body.title, "Management token, or the account it acts on, required")
        }
        for (const [path, body] of [
          ["/v1/keys", { label: "x" }],
          ["/v1/keys/rotate", { key_id: "key_x" }],
          ["/v1/keys/revoke", { key_id: "key_x" }],
          ["/v1/alert", { threshold: 5 }]
        ] as const) {
          const ask = yield* post(app, path, body, { key: token, ip })
          assert.strictEqual(ask.status, 401, path)
          assert.strictEqual(ask.body.code, "AUTH_REQUIRED", path)
          assert.deepStrictEqual([...ask.body.account_ids].sort(), both, path)
        }
        // Its own sessions need no account.
        const sessions = yield* app.call("/v1/auth/tokens", { key: token, ip })
        assert.strictEqual(sessions.status, 200, JSON.stringify(sessions.body))
        assert.lengthOf(sessions.body.tokens, 2)
        // A management token with two accounts does not spend on data routes.
        const data = yield* app.call("/v1/profnet/test-echo?value=x", { key: token, ip })
        assert.strictEqual(data.status, 401)
        assert.strictEqual(data.body.code, "AUTH_REQUIRED")
        assert.deepStrictEqual([...data.body.account_ids].sort(), both)
        const usage = yield* app.call("/v1/usage", { key: token, ip })
        assert.strictEqual(usage.body.code, "AUTH_REQUIRED")

        const byQuery = yield* app.call(`/v1/keys?account_id=${minted.account_id}`, { key: token, ip })
        assert.strictEqual(byQuery.status, 200, JSON.stringify(byQuery.body))
        assert.strictEqual(byQuery.body.account_id, minted.account_id)
        assert.strictEqual(byQuery.body.keys.length, 1)
        const trialKeys = yield* app.call(`/v1/keys?account_id=${trialAccount}`, { key: token, ip })
        assert.strictEqual(trialKeys.body.account_id, trialAccount)
        assert.deepStrictEqual(trialKeys.body.keys, [])

        // The email had its grant with the claim: the trial account's first key earns nothing.
        const created = yield* post(
          app,
          "/v1/keys",
          { label: "t", account_id: trialAccount },
          { key: token, ip }
        )
        assert.strictEqual(created.status, 201, JSON.stringify(created.body))
        assert.strictEqual(created.body.grant_credits, 0)
        const inQuery = yield* post(
          app,
          `/v1/alert?account_id=${trialAccount}`,
          { threshold: 7 },
          { key: token, ip }
        )
        assert.strictEqual(inQuery.status, 200, JSON.stringify(inQuery.body))
        assert.strictEqual(inQuery.body.account_id, trialAccount)
        assert.strictEqual(inQuery.body.threshold, 7)
        // The body wins over the query.
        const bodyWins = yield* post(
          app,
          `/v1/alert?account_id=${trialAccount}`,
          { threshold: 9, account_id: minted.account_id },
          { key: token, ip }
        )
        assert.strictEqual(bodyWins.body.account_id, minted.account_id)
        const rotated = yield* post(
          app,
          "/v1/keys/rotate",
          { key_id: byQuery.body.keys[0].key_id, account_id: minted.account_id },
          { key: token, ip }
        )
        assert.strictEqual(rotated.status, 200, JSON.stringify(rotated.body))
        // The minted account's key is not the trial account's: NOT_FOUND there.
        const crossed = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: rotated.body.key_id, account_id: trialAccount },
          { key: token, ip }
        )
        assert.strictEqual(crossed.status, 404)
        assert.strictEqual(crossed.body.param, "key_id")
        // An account this email does not govern is refused and listed nowhere.
        const stranger = yield* app.mint(ip)
        const notMine = yield* app.call(`/v1/keys?account_id=${stranger.account_id}`, { key: token, ip })
        assert.strictEqual(notMine.status, 401)
        assert.strictEqual(notMine.body.code, "AUTH_REQUIRED")
        assert.deepStrictEqual([...notMine.body.account_ids].sort(), both)
      })
    )

    it.effect("enumeration: start and recover answer the same bytes for known and unknown emails", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const known = "known@example.com"
        const minted = yield* app.mint(freshIp())
        yield* signIn(app, known, { key: minted.key, ip: freshIp() })
        const unclaimedOnly = "unclaimed@example.com"
        const raw = (path: string, email: string) =>
          Effect.promise(async () => {
            const response = await fetch(`${app.url}${path}`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-forwarded-for": freshIp() },
              body: JSON.stringify({ email })
            })
            return {
              status: response.status,
              type: response.headers.get("content-type"),
              text: await response.text()
            }
          })
        const beforeKnown = (yield* mailTo(known)).length
        const startKnown = yield* raw("/v1/auth/email/start", known)
        const startUnknown = yield* raw("/v1/auth/email/start", "stranger@example.com")
        assert.strictEqual(startKnown.status, 202)
        assert.deepStrictEqual(startKnown, startUnknown)
        assert.deepStrictEqual(JSON.parse(startKnown.text), { sent: true, expires_in: 600 })
        // Both got a sign-in message (a new email's sign-in creates its account).
        assert.strictEqual((yield* mailTo(known)).length, beforeKnown + 1)
        assert.strictEqual((yield* latestMail(known)).kind, (yield* latestMail("stranger@example.com")).kind)
        assert.lengthOf(yield* mailTo("stranger@example.com"), 1)

        // Recovery: the claimed email gets a link; the unknown and the never-claimed get the same one
        // message, saying there is nothing to recover.
        // A claim started with a key but never confirmed: the account stays unclaimed.
        const unconfirmedIp = freshIp()
        const unconfirmed = yield* app.mint(unconfirmedIp)
        const started = yield* post(
          app,
          "/v1/auth/email/start",
          { email: unclaimedOnly },
          { key: unconfirmed.key, ip: unconfirmedIp }
        )
        assert.strictEqual(started.status, 202)
        const mailsBefore = {
          unclaimed: (yield* mailTo(unclaimedOnly)).length,
          nobody: (yield* mailTo("nobody@example.com")).length
        }
        const recoverKnown = yield* raw("/v1/recover", known)
        const recoverUnknown = yield* raw("/v1/recover", "nobody@example.com")
        const recoverUnclaimed = yield* raw("/v1/recover", unclaimedOnly)
        assert.strictEqual(recoverKnown.status, 202)
        assert.deepStrictEqual(recoverKnown, recoverUnknown)
        assert.deepStrictEqual(recoverKnown, recoverUnclaimed)
        assert.deepStrictEqual(JSON.parse(recoverKnown.text), { sent: true })
        const knownMail = yield* latestMail(known)
        assert.strictEqual(knownMail.kind, "recovery")
        assert.ok(linkTokenIn(knownMail.text, "/recover"))
        for (const [email, before] of [
          [unclaimedOnly, mailsBefore.unclaimed],
          ["nobody@example.com", mailsBefore.nobody]
        ] as const) {
          const mails = yield* mailTo(email)
          assert.strictEqual(mails.length, before + 1)
          assert.strictEqual(mails.at(-1)!.kind, "recovery")
          assert.notInclude(mails.at(-1)!.text, "/recover?token=")
          assert.include(mails.at(-1)!.text, "no claimed account belongs to it")
        }
        // A malformed address is an error either way; it says nothing about who exists.
        const malformed = yield* raw("/v1/recover", "nobody")
        assert.strictEqual(malformed.status, 400)
        assert.strictEqual(JSON.parse(malformed.text).param, "email")
        // A wrong code reads the same whether the email is known, unknown or has no pending sign-in.
        const pendingCode = codeIn(
          (yield* mailTo(known)).filter((mail) => mail.kind === "sign_in").at(-1)!.text
        )
        const wrong = otherCode(pendingCode)
        const wrongFor = (email: string) =>
          Effect.promise(async () => {
            const response = await fetch(`${app.url}/v1/auth/email/verify`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-forwarded-for": freshIp() },
              body: JSON.stringify({ email, code: wrong })
            })
            return { status: response.status, text: await response.text() }
          })
        const wrongKnown = yield* wrongFor(known)
        assert.strictEqual(wrongKnown.status, 401)
        assert.deepStrictEqual(yield* wrongFor("never-seen@example.com"), wrongKnown)
        // The sign-in mail of the unknown email carries a working code.
        const code = codeIn((yield* latestMail("stranger@example.com")).text)
        const verified = yield* post(
          app,
          "/v1/auth/email/verify",
          { email: "stranger@example.com", code },
          { ip: freshIp() }
        )
        assert.strictEqual(verified.status, 200)
        assert.strictEqual(verified.body.accounts.length, 1)
      })
    )
    it.effect(
      "start: a management token bearer is ignored; a bad or revoked spend key is refused and sends nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const person = yield* signIn(app, "bearer@example.com", { ip })
          const byToken = yield* signIn(app, "bearer@example.com", {
            key: person.management_token,
            ip: freshIp()
          })
          assert.strictEqual(byToken.claimed, null)
          assert.strictEqual(byToken.grant_credits, 0)
          assert.deepStrictEqual(byToken.accounts, person.accounts)

          const minted = yield* app.mint(ip)
          const owner = yield* signIn(app, "revoker@example.com", { key: minted.key, ip: freshIp() })
          const keyId = (yield* app.call("/v1/keys", { key: owner.management_token, ip })).body.keys[0].key_id
          yield* post(app, "/v1/keys/revoke", { key_id: keyId }, { key: owner.management_token, ip })
          for (const bearer of [minted.key, "svc_trial_nope", "not-a-key"]) {
            const refused = yield* post(
              app,
              "/v1/auth/email/start",
              { email: "nobody-sent@example.com" },
              { key: bearer, ip: freshIp() }
            )
            assert.strictEqual(refused.status, 401, bearer)
            assert.strictEqual(refused.body.code, "UNAUTHORIZED", bearer)
          }
          assert.deepStrictEqual(yield* mailTo("nobody-sent@example.com"), [])
        })
    )

    it.effect("listings: a key's hint and last use, a token's last use; never a secret", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const person = yield* signIn(app, "listing@example.com", { ip })
        const token = person.management_token
        const created = yield* post(app, "/v1/keys", {}, { key: token, ip })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.label, null)
        assert.match(created.body.key, /^svc_trial_/)
        assert.strictEqual(created.body.hint, `svc_trial_...${created.body.key.slice(-4)}`)
        const before = (yield* app.call("/v1/keys", { key: token, ip })).body.keys[0]
        assert.strictEqual(before.last_used_at, null)
        assert.strictEqual(before.hint, created.body.hint)
        assert.strictEqual(before.created_at, created.body.created_at)
        assert.strictEqual((yield* app.call("/v1/usage", { key: created.body.key, ip })).status, 200)
        const after = (yield* app.call("/v1/keys", { key: token, ip })).body.keys[0]
        assert.isString(after.last_used_at)
        assert.isAtLeast(Date.parse(after.last_used_at), Date.parse(after.created_at))
        const tokens = (yield* app.call("/v1/auth/tokens", { key: token, ip })).body.tokens
        assert.lengthOf(tokens, 1)
        assert.isString(tokens[0].last_used_at)
        assert.strictEqual(
          Date.parse(tokens[0].expires_at) - Date.parse(tokens[0].created_at),
          90 * 24 * 3_600_000
        )
        assert.isFalse(JSON.stringify(tokens).includes(token.slice(5)))
      })
    )
  })
})
