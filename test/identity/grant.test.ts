import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { accountRow, codeFor, grantFacts, post, signIn, spend } from "./support.ts"

const freshIp = ipSequence("10.64")

const grantsOf = (email: string) =>
  Effect.map(grantFacts, (facts) => facts.grants.filter((grant) => grant.email === email))

describe(`the one-time grant (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "once per key: the claiming email gets it, a later sign-in with the key or another email does not",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const first = yield* signIn(app, "key-once@example.com", { key: minted.key, ip })
          assert.strictEqual(first.claimed, minted.account_id)
          assert.strictEqual(first.grant_credits, 10_000)
          const again = yield* signIn(app, "key-once@example.com", { key: minted.key, ip })
          assert.strictEqual(again.claimed, null)
          assert.strictEqual(again.grant_credits, 0)
          // Another email with the same key: not a claim (the account is taken), no grant, and the
          // other email does not come to govern the account.
          const thief = yield* signIn(app, "other-email@example.com", { key: minted.key, ip })
          assert.strictEqual(thief.claimed, null)
          assert.strictEqual(thief.grant_credits, 0)
          assert.isFalse(thief.accounts.some((account) => account.account_id === minted.account_id))
          const row = yield* accountRow(minted.account_id)
          assert.deepStrictEqual(row, {
            plan: "trial",
            email: "key-once@example.com",
            balance: 0,
            grant: 10_000,
            claimed: true
          })
          const facts = yield* grantFacts
          assert.deepStrictEqual(
            facts.grants
              .filter((grant) => grant.account_id === minted.account_id)
              .map((grant) => grant.email),
            ["key-once@example.com"]
          )
          assert.deepStrictEqual(
            facts.events.filter((event) => event.account_id === minted.account_id),
            [{ account_id: minted.account_id, credits: 10_000 }]
          )
        })
    )

    it.effect(
      "once per email: a first key on the sign-in's trial account takes it, a later claim gets 0",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const email = "email-once@example.com"
          const person = yield* signIn(app, email, { ip })
          const trial = person.accounts[0]!.account_id
          const firstKey = yield* post(app, "/v1/keys", { label: "a" }, { key: person.management_token, ip })
          assert.strictEqual(firstKey.status, 201, JSON.stringify(firstKey.body))
          assert.strictEqual(firstKey.body.grant_credits, 10_000)
          // Revoking every key and creating another: not a first key any more.
          yield* post(
            app,
            "/v1/keys/revoke",
            { key_id: firstKey.body.key_id },
            { key: person.management_token, ip }
          )
          const afterRevoke = yield* post(
            app,
            "/v1/keys",
            { label: "b" },
            { key: person.management_token, ip }
          )
          assert.strictEqual(afterRevoke.body.grant_credits, 0)

          const minted = yield* app.mint(ip)
          const claim = yield* signIn(app, email, { key: minted.key, ip })
          assert.strictEqual(claim.claimed, minted.account_id)
          assert.strictEqual(claim.grant_credits, 0)
          assert.deepStrictEqual(
            claim.accounts.map((account) => [account.account_id, account.grant_credits]).sort(),
            [
              [trial, 10_000],
              [minted.account_id, 0]
            ].sort()
          )
          assert.deepStrictEqual(
            (yield* grantsOf(email)).map((grant) => [grant.account_id, grant.key_id, grant.credits]),
            [[trial, firstKey.body.key_id, 10_000]]
          )
        })
    )

    it.effect("once per mailbox: a +tag, the case, and Gmail's dots and two domains are one person", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (const spellings of [
          ["farm+1@example.com", "farm+2@example.com", "Farm@Example.com"],
          ["f.arm@gmail.com", "farm+x@googlemail.com", "F.A.R.M@gmail.com"]
        ]) {
          const granted = []
          for (const email of spellings) {
            const ip = freshIp()
            const minted = yield* app.mint(ip)
            const claim = yield* signIn(app, email, { key: minted.key, ip })
            // Each spelling is its own identity, kept as typed (lower-cased), and claims its account.
            assert.strictEqual(claim.email, email.toLowerCase())
            assert.strictEqual(claim.claimed, minted.account_id)
            granted.push(claim.grant_credits)
          }
          assert.deepStrictEqual(granted, [10_000, 0, 0], spellings.join(", "))
        }
        // A new spelling's own trial account: its first key earns nothing either.
        const ip = freshIp()
        const person = yield* signIn(app, "farm+3@example.com", { ip })
        const firstKey = yield* post(app, "/v1/keys", { label: "a" }, { key: person.management_token, ip })
        assert.strictEqual(firstKey.status, 201, JSON.stringify(firstKey.body))
        assert.strictEqual(firstKey.body.grant_credits, 0)
        // Another mailbox at the same provider is another person.
        const other = yield* app.mint(ip)
        const stranger = yield* signIn(app, "farmer@gmail.com", { key: other.key, ip })
        assert.strictEqual(stranger.grant_credits, 10_000)
      })
    )

    it.effect("the same code verified twice at once: one sign-in, one UNAUTHORIZED, one grant", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const email = "same-code@example.com"
        const minted = yield* app.mint(ip)
        const { code } = yield* codeFor(app, email, { key: minted.key, ip })
        const replies = yield* Effect.all(
          Array.from({ length: 4 }, () =>
            post(app, "/v1/auth/email/verify", { email, code }, { key: minted.key, ip })
          ),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(replies.map((reply) => reply.status).sort(), [200, 401, 401, 401])
        const won = replies.find((reply) => reply.status === 200)!
        assert.strictEqual(won.body.grant_credits, 10_000)
        assert.lengthOf(yield* grantsOf(email), 1)
        assert.strictEqual((yield* accountRow(minted.account_id)).grant, 10_000)
      })
    )

    it.effect("one key claimed by two emails at once: exactly one claims it and has the grant", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 3; round++) {
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const emails = [`racer-a${round}@example.com`, `racer-b${round}@example.com`]
          const codes: Array<string> = []
          for (const email of emails) codes.push((yield* codeFor(app, email, { key: minted.key, ip })).code)
          const replies = yield* Effect.all(
            emails.map((email, i) =>
              post(app, "/v1/auth/email/verify", { email, code: codes[i] }, { key: minted.key, ip })
            ),
            { concurrency: "unbounded" }
          )
          for (const reply of replies) assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
          const claimers = replies.filter((reply) => reply.body.claimed === minted.account_id)
          assert.lengthOf(claimers, 1)
          const winner = claimers[0]!.body
          assert.strictEqual(winner.grant_credits, 10_000)
          const loser = replies.find((reply) => reply !== claimers[0])!.body
          assert.strictEqual(loser.claimed, null)
          assert.strictEqual(loser.grant_credits, 0)
          const row = yield* accountRow(minted.account_id)
          assert.strictEqual(row.email, winner.email)
          assert.strictEqual(row.grant, 10_000)
          const facts = yield* grantFacts
          assert.lengthOf(
            facts.grants.filter((grant) => grant.account_id === minted.account_id),
            1
          )
          assert.lengthOf(
            facts.events.filter((event) => event.account_id === minted.account_id),
            1
          )
        }
      })
    )

    it.effect("one email racing a claim against its trial account's first key: one grant in all", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 3; round++) {
          const ip = freshIp()
          const email = `both-ways${round}@example.com`
          const person = yield* signIn(app, email, { ip })
          const minted = yield* app.mint(ip)
          const { code } = yield* codeFor(app, email, { key: minted.key, ip })
          const [claimed, created] = yield* Effect.all(
            [
              post(app, "/v1/auth/email/verify", { email, code }, { key: minted.key, ip }),
              post(app, "/v1/keys", { label: "first" }, { key: person.management_token, ip })
            ],
            { concurrency: "unbounded" }
          )
          assert.strictEqual(claimed.status, 200, JSON.stringify(claimed.body))
          // The key creation may find two accounts if the claim committed first.
          if (created.status !== 201) assert.strictEqual(created.body.code, "AUTH_REQUIRED")
          const createdGrant = created.status === 201 ? created.body.grant_credits : 0
          assert.strictEqual(claimed.body.claimed, minted.account_id)
          assert.strictEqual(claimed.body.grant_credits + createdGrant, 10_000, `round ${round}`)
          const grants = yield* grantsOf(email)
          assert.lengthOf(grants, 1)
          const spendable =
            (yield* accountRow(minted.account_id)).grant +
            (yield* accountRow(person.accounts[0]!.account_id)).grant
          assert.strictEqual(spendable, 10_000)
        }
      })
    )

    it.effect("first keys created at once: exactly one earns the grant", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 3; round++) {
          const ip = freshIp()
          const email = `many-first${round}@example.com`
          const person = yield* signIn(app, email, { ip })
          const replies = yield* Effect.all(
            Array.from({ length: 5 }, (_, i) =>
              post(app, "/v1/keys", { label: `k${i}` }, { key: person.management_token, ip })
            ),
            { concurrency: "unbounded" }
          )
          for (const reply of replies) assert.strictEqual(reply.status, 201, JSON.stringify(reply.body))
          assert.deepStrictEqual(
            replies.map((reply) => reply.body.grant_credits).sort((a, b) => b - a),
            [10_000, 0, 0, 0, 0]
          )
          const account = person.accounts[0]!.account_id
          assert.strictEqual((yield* accountRow(account)).grant, 10_000)
          const facts = yield* grantFacts
          assert.lengthOf(
            facts.events.filter((event) => event.account_id === account),
            1
          )
          const listed = yield* app.call("/v1/keys", { key: person.management_token, ip })
          assert.lengthOf(listed.body.keys, 5)
        }
      })
    )

    it.effect("the grant is spent after the free per-IP budget, and before purchased balance", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const admin = yield* Admin
        const ip = freshIp()
        const minted = yield* app.mint(ip)
        const claim = yield* signIn(app, "spender@example.com", { key: minted.key, ip })
        assert.strictEqual(claim.grant_credits, 10_000)
        const funding = (reply: { status: number; body: any }) => {
          assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
          return reply.body.receipt.funding
        }
        assert.deepStrictEqual(funding(yield* spend(app, minted.key, ip, 150)), {
          free_tier: 150,
          grant: 0,
          balance: 0
        })
        assert.deepStrictEqual(funding(yield* spend(app, minted.key, ip, 150)), {
          free_tier: 50,
          grant: 100,
          balance: 0
        })
        assert.deepStrictEqual(funding(yield* spend(app, minted.key, ip, 30)), {
          free_tier: 0,
          grant: 30,
          balance: 0
        })
        assert.strictEqual((yield* accountRow(minted.account_id)).grant, 10_000 - 130)
        // Purchased balance comes after the grant.
        yield* Effect.orDie(admin.credit(minted.account_id, 500, "balance", "test purchase"))
        assert.deepStrictEqual(funding(yield* spend(app, minted.key, ip, 20)), {
          free_tier: 0,
          grant: 20,
          balance: 0
        })
        const row = yield* accountRow(minted.account_id)
        assert.strictEqual(row.grant, 10_000 - 150)
        assert.strictEqual(row.balance, 500)
        // The management token (one account) spends the same way.
        assert.deepStrictEqual(funding(yield* spend(app, claim.management_token, ip, 10)), {
          free_tier: 0,
          grant: 10,
          balance: 0
        })
      })
    )
    it.effect(
      "one email, two unclaimed keys: a newer start supersedes; both claimed in turn, one grant",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const email = "two-keys@example.com"
          const one = yield* app.mint(ip)
          const two = yield* app.mint(ip)
          const first = yield* codeFor(app, email, { key: one.key, ip })
          const second = yield* codeFor(app, email, { key: two.key, ip })
          // Both starts are pending for one email: only the newer (key two) can finish.
          if (first.code !== second.code) {
            const stale = yield* post(
              app,
              "/v1/auth/email/verify",
              { email, code: first.code },
              { key: one.key, ip }
            )
            assert.strictEqual(stale.status, 401)
          }
          assert.strictEqual(
            (yield* post(app, "/v1/auth/email/verify", { token: first.token }, { key: one.key, ip })).status,
            401
          )
          const claimedTwo = yield* post(
            app,
            "/v1/auth/email/verify",
            { email, code: second.code },
            { key: two.key, ip }
          )
          assert.strictEqual(claimedTwo.status, 200, JSON.stringify(claimedTwo.body))
          assert.strictEqual(claimedTwo.body.claimed, two.account_id)
          assert.strictEqual(claimedTwo.body.grant_credits, 10_000)
          assert.isFalse((yield* accountRow(one.account_id)).claimed)

          const claimedOne = yield* signIn(app, email, { key: one.key, ip })
          assert.strictEqual(claimedOne.claimed, one.account_id)
          assert.strictEqual(claimedOne.grant_credits, 0)
          assert.strictEqual((yield* accountRow(one.account_id)).grant, 0)
          assert.strictEqual((yield* accountRow(two.account_id)).grant, 10_000)
          assert.deepStrictEqual(
            (yield* grantsOf(email)).map((grant) => grant.account_id),
            [two.account_id]
          )
        })
    )
  })
})
