import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeIn, latestMail, mailTo, post, spend } from "./support.ts"

/**
 * Random sequences of identity operations against one app, checked step by step against a model
 * (who owns which account, which keys are active, who had the grant) and after each run against
 * the books: the grant at most once per mailbox and once per key, nothing negative, and no revoked
 * key authenticating. Of the four addresses, two and two are one mailbox (a `+tag`; Gmail's dots
 * and its two domains).
 */

type Op =
  | { readonly t: "mint" }
  | { readonly t: "signIn"; readonly email: number; readonly key: number | undefined }
  | { readonly t: "createKey"; readonly email: number; readonly account: number }
  | { readonly t: "rotate"; readonly key: number }
  | { readonly t: "revoke"; readonly key: number }
  | { readonly t: "rekey"; readonly email: number; readonly link: number }
  | { readonly t: "spend"; readonly key: number; readonly cost: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant<Op>({ t: "mint" }), weight: 2 },
  {
    arbitrary: fc.record({
      t: fc.constant("signIn" as const),
      email: fc.nat(3),
      key: fc.option(fc.nat(), { nil: undefined })
    }),
    weight: 4
  },
  {
    arbitrary: fc.record({ t: fc.constant("createKey" as const), email: fc.nat(3), account: fc.nat() }),
    weight: 2
  },
  { arbitrary: fc.record({ t: fc.constant("rotate" as const), key: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant("revoke" as const), key: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant("rekey" as const), email: fc.nat(3), link: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      t: fc.constant("spend" as const),
      key: fc.nat(),
      cost: fc.integer({ min: 1, max: 120 })
    }),
    weight: 3
  }
)

interface ModelKey {
  readonly id: string
  readonly secret: string
  readonly account: string
  active: boolean
}
interface ModelAccount {
  readonly id: string
  owner: string | undefined
  hadKey: boolean
}

const stats = {
  runs: 0,
  steps: 0,
  claims: 0,
  grants: 0,
  rotations: 0,
  revocations: 0,
  rekeys: 0,
  spends: 0,
  refused: 0
}

const freshIp = ipSequence("10.68")
let runCounter = 0

const runScenario = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const sql = yield* SqlClient.SqlClient
    const run = ++runCounter
    const emails = [
      `prop${run}-a@example.com`,
      `prop${run}-a+farm@example.com`,
      `p.rop${run}@gmail.com`,
      `prop${run}@googlemail.com`
    ]
    /** The model's mailboxes: the first two addresses are one, the last two another. */
    const mailboxOf = (email: string) => (emails.indexOf(email) < 2 ? "first" : "second")
    const spendIp = freshIp()
    const keys: Array<ModelKey> = []
    const accounts = new Map<string, ModelAccount>()
    const tokens = new Map<string, string>()
    const grantedEmails = new Set<string>()
    const grantedMailboxes = new Set<string>()
    const grantedKeys = new Set<string>()
    const starts = new Map<string, number>()
    const recoveries = new Map<string, number>()
    const ownedBy = (email: string) => [...accounts.values()].filter((account) => account.owner === email)
    const pick = <A>(items: ReadonlyArray<A>, index: number) =>
      items.length === 0 ? undefined : items[index % items.length]

    const keyIdOf = (accountId: string) =>
      Effect.map(
        sql<{ id: string }>`SELECT id FROM api_keys WHERE account_id = ${accountId}`,
        (rows) => rows[0]!.id
      ).pipe(Effect.orDie)

    for (const step of ops) {
      stats.steps++
      switch (step.t) {
        case "mint": {
          const minted = yield* app.mint(freshIp())
          accounts.set(minted.account_id, { id: minted.account_id, owner: undefined, hadKey: true })
          keys.push({
            id: yield* keyIdOf(minted.account_id),
            secret: minted.key,
            account: minted.account_id,
            active: true
          })
          break
        }
        case "signIn": {
          const email = emails[step.email]!
          // 3 starts per email per hour: the model stays under it (a window may reset, never fill early).
          if ((starts.get(email) ?? 0) >= 3) break
          const key = step.key === undefined ? undefined : pick(keys, step.key)
          const ip = freshIp()
          const started = yield* post(
            app,
            "/v1/auth/email/start",
            { email },
            key === undefined ? { ip } : { key: key.secret, ip }
          )
          if (key !== undefined && !key.active) {
            // A revoked key as the bearer of a claim is refused before anything is sent.
            assert.strictEqual(started.status, 401, JSON.stringify(started.body))
            assert.strictEqual(started.body.code, "UNAUTHORIZED")
            stats.refused++
            break
          }
          assert.strictEqual(started.status, 202, JSON.stringify(started.body))
          starts.set(email, (starts.get(email) ?? 0) + 1)
          const code = codeIn((yield* latestMail(email)).text)
          // The claim's key goes to verify too: a claim needs the same key at start and verify.
          const verified = yield* post(
            app,
            "/v1/auth/email/verify",
            { email, code },
            key === undefined ? { ip } : { key: key.secret, ip }
          )
          assert.strictEqual(verified.status, 200, JSON.stringify(verified.body))
          tokens.set(email, verified.body.management_token)
          // The model's prediction of the claim and the grant.
          let claimed: string | null = null
          let granted = 0
          if (key !== undefined) {
            const account = accounts.get(key.account)!
            if (account.owner === undefined) {
              account.owner = email
              claimed = account.id
            }
            if (
              (claimed !== null || account.owner === email) &&
              !grantedMailboxes.has(mailboxOf(email)) &&
              !grantedKeys.has(key.id)
            ) {
              grantedEmails.add(email)
              grantedMailboxes.add(mailboxOf(email))
              grantedKeys.add(key.id)
              granted = 10_000
            }
          }
          if (ownedBy(email).length === 0) {
            const created = verified.body.accounts as Array<{ account_id: string }>
            assert.lengthOf(created, 1)
            accounts.set(created[0]!.account_id, { id: created[0]!.account_id, owner: email, hadKey: false })
          }
          assert.strictEqual(verified.body.claimed, claimed)
          assert.strictEqual(verified.body.grant_credits, granted)
          assert.deepStrictEqual(
            verified.body.accounts.map((account: { account_id: string }) => account.account_id).sort(),
            ownedBy(email)
              .map((account) => account.id)
              .sort()
          )
          if (claimed !== null) stats.claims++
          if (granted > 0) stats.grants++
          break
        }
        case "createKey": {
          const email = emails[step.email]!
          const token = tokens.get(email)
          const account = pick(ownedBy(email), step.account)
          if (token === undefined || account === undefined) break
          const created = yield* post(
            app,
            "/v1/keys",
            { label: "prop", account_id: account.id },
            { key: token, ip: freshIp() }
          )
          assert.strictEqual(created.status, 201, JSON.stringify(created.body))
          // Every account here is on plan trial: its first key earns the grant if the email has none.
          const expected = !account.hadKey && !grantedMailboxes.has(mailboxOf(email)) ? 10_000 : 0
          if (expected > 0) {
            grantedEmails.add(email)
            grantedMailboxes.add(mailboxOf(email))
            grantedKeys.add(created.body.key_id)
            stats.grants++
          }
          assert.strictEqual(created.body.grant_credits, expected)
          account.hadKey = true
          keys.push({ id: created.body.key_id, secret: created.body.key, account: account.id, active: true })
          break
        }
        case "rotate":
        case "revoke": {
          const key = pick(keys, step.key)
          const owner = key === undefined ? undefined : accounts.get(key.account)?.owner
          const token = owner === undefined ? undefined : tokens.get(owner)
          if (key === undefined || token === undefined) break
          const reply = yield* post(
            app,
            `/v1/keys/${step.t}`,
            { key_id: key.id, account_id: key.account },
            { key: token, ip: freshIp() }
          )
          if (step.t === "rotate") {
            if (!key.active) {
              assert.strictEqual(reply.status, 404)
              assert.strictEqual(reply.body.param, "key_id")
              break
            }
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.replaces, key.id)
            key.active = false
            keys.push({ id: reply.body.key_id, secret: reply.body.key, account: key.account, active: true })
            stats.rotations++
          } else {
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
            key.active = false
            stats.revocations++
          }
          break
        }
        case "rekey": {
          const email = emails[step.email]!
          if ((recoveries.get(email) ?? 0) >= 3) break
          recoveries.set(email, (recoveries.get(email) ?? 0) + 1)
          const before = (yield* mailTo(email)).length
          const asked = yield* post(app, "/v1/recover", { email }, { ip: freshIp() })
          assert.strictEqual(asked.status, 202)
          const links = (yield* mailTo(email))
            .slice(before)
            .filter((mail) => mail.kind === "recovery")
            .flatMap((mail) =>
              [...mail.text.matchAll(/\/recover\?token=([0-9A-Za-z]{43})/g)].map((m) => m[1]!)
            )
          // Every account this email owns is claimed (by a key or by its first sign-in).
          assert.strictEqual(links.length, ownedBy(email).length)
          const link = pick(links, step.link)
          if (link === undefined) break
          const rekeyed = yield* post(app, "/v1/rekey", { token: link }, { ip: freshIp() })
          assert.strictEqual(rekeyed.status, 200, JSON.stringify(rekeyed.body))
          const account = accounts.get(rekeyed.body.account_id)!
          assert.strictEqual(account.owner, email)
          const wereActive = keys.filter((key) => key.account === account.id && key.active)
          assert.strictEqual(rekeyed.body.revoked, wereActive.length)
          for (const key of wereActive) key.active = false
          account.hadKey = true
          keys.push({ id: rekeyed.body.key_id, secret: rekeyed.body.key, account: account.id, active: true })
          stats.rekeys++
          break
        }
        case "spend": {
          const key = pick(keys, step.key)
          if (key === undefined) break
          const reply = yield* spend(app, key.secret, spendIp, step.cost)
          if (!key.active) {
            assert.strictEqual(reply.status, 401, JSON.stringify(reply.body))
            assert.strictEqual(reply.body.code, "UNAUTHORIZED")
            stats.refused++
          } else {
            // Charged, or refused for want of credits (the IP's free budget spent and no grant left).
            if (reply.status !== 200) {
              assert.include([402, 403], reply.status, JSON.stringify(reply.body))
              assert.include(["INSUFFICIENT_CREDITS", "TRIAL_CAP_EXCEEDED"], reply.body.code)
            }
            if (reply.status === 200) stats.spends++
          }
          break
        }
      }
    }

    // Revoked keys never authenticate; active ones do.
    for (const key of keys) {
      const usage = yield* app.call("/v1/usage", { key: key.secret, ip: spendIp })
      assert.strictEqual(usage.status, key.active ? 200 : 401, `${key.id} active=${key.active}`)
    }
    // The books: one grant per mailbox and per key, each one credit event of 10,000; nothing negative.
    const grants = yield* Effect.orDie(
      sql<{ account_id: string; email: string; key_id: string; credits: number | bigint }>`
        SELECT account_id, email, key_id, credits FROM grants`
    )
    const ofThisRun = grants.filter((grant) => emails.includes(grant.email))
    assert.strictEqual(
      new Set(ofThisRun.map((grant) => mailboxOf(grant.email))).size,
      ofThisRun.length,
      "one grant per mailbox"
    )
    const emailsGranted = grants.map((grant) => grant.email)
    const keysGranted = grants.map((grant) => grant.key_id)
    assert.strictEqual(new Set(emailsGranted).size, grants.length)
    assert.strictEqual(new Set(keysGranted).size, grants.length)
    for (const email of emails)
      assert.strictEqual(emailsGranted.includes(email), grantedEmails.has(email), email)
    for (const key of keys) assert.strictEqual(keysGranted.includes(key.id), grantedKeys.has(key.id), key.id)
    const events = yield* Effect.orDie(
      sql<{ account_id: string; credits: number | bigint }>`
        SELECT account_id, credits FROM credit_events WHERE kind = 'grant'`
    )
    const perAccount = (rows: ReadonlyArray<{ account_id: string; credits: number | bigint }>) => {
      const sums = new Map<string, number>()
      for (const row of rows) sums.set(row.account_id, (sums.get(row.account_id) ?? 0) + Number(row.credits))
      return [...sums.entries()].sort()
    }
    assert.deepStrictEqual(perAccount(events), perAccount(grants))
    for (const grant of grants) assert.strictEqual(Number(grant.credits), 10_000)
    const [negative] = yield* Effect.orDie(
      sql<{
        n: number | bigint
      }>`SELECT count(*) AS n FROM accounts WHERE grant_credits < 0 OR balance_credits < 0`
    )
    assert.strictEqual(Number(negative!.n), 0)
    stats.runs++
  })

describe(`identity properties (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "grants at most once per email and per key, nothing negative, revoked keys never authenticate",
      () =>
        Effect.gen(function* () {
          const context = yield* Effect.context<TestApp | SqlClient.SqlClient>()
          const started = performance.now()
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 24 }), (ops) =>
                Effect.runPromiseWith(context)(runScenario(ops))
              ),
              { numRuns: 30, endOnFailure: true }
            )
          )
          const seconds = ((performance.now() - started) / 1000).toFixed(1)
          console.log(`identity properties (${storeName}, ${seconds} s):`, JSON.stringify(stats))
          assert.isAbove(stats.claims, 0)
          assert.isAbove(stats.grants, 0)
          assert.isAbove(stats.revocations + stats.rotations + stats.rekeys, 0)
        }),
      120_000
    )
  })
})
