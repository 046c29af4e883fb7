import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { type Reply, TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * The metering invariants under concurrency: random operations, accounts, client IPs,
 * failures and idempotency-key retries fired at once over HTTP, then the books checked by SQL
 * and through the API. PGlite serialises transactions; PostgreSQL runs them in parallel.
 */

const numRuns = 12

type AccountKind = "trial" | "trialGrant" | "flex" | "production"
type Failure = "upstream" | "not_found" | "defect"
type Idempotency =
  | { readonly kind: "none" }
  | { readonly kind: "fresh" }
  /** Same key and arguments as an earlier call (`of` picks which). */
  | { readonly kind: "retry"; readonly of: number }
  /** Same key as an earlier call, other arguments. */
  | { readonly kind: "reuse"; readonly of: number }

interface CallSpec {
  readonly account: number
  readonly ip: number
  readonly operation: number
  readonly cost: number
  readonly refund: number
  readonly fail: Failure | undefined
  readonly delayMs: number
  readonly idempotency: Idempotency
}

const accountSpec = fc.record({
  kind: fc.constantFrom<AccountKind>("trial", "trial", "trialGrant", "flex", "production"),
  grant: fc.integer({ min: 0, max: 300 }),
  balance: fc.integer({ min: 0, max: 500 }),
  paidAlsoGranted: fc.boolean()
})

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  account: fc.nat(),
  ip: fc.nat(),
  operation: fc.constantFrom(0, 0, 1, 2),
  cost: fc.integer({ min: 1, max: 60 }),
  refund: fc.oneof(
    { arbitrary: fc.constant(0), weight: 2 },
    { arbitrary: fc.integer({ min: 0, max: 60 }), weight: 1 }
  ),
  fail: fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 5 },
    { arbitrary: fc.constantFrom<Failure>("upstream", "not_found", "defect"), weight: 1 }
  ),
  delayMs: fc.integer({ min: 0, max: 30 }),
  idempotency: fc.oneof(
    { arbitrary: fc.constant({ kind: "none" } as const), weight: 1 },
    { arbitrary: fc.constant({ kind: "fresh" } as const), weight: 5 },
    { arbitrary: fc.record({ kind: fc.constant("retry" as const), of: fc.nat() }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant("reuse" as const), of: fc.nat() }), weight: 1 }
  )
})

const scenarioArbitrary = fc.record({
  accounts: fc.array(accountSpec, { minLength: 2, maxLength: 7 }),
  ips: fc.integer({ min: 1, max: 2 }),
  batches: fc.array(fc.array(callSpec, { minLength: 4, maxLength: 16 }), { minLength: 3, maxLength: 8 })
})

type Scenario = typeof scenarioArbitrary extends fc.Arbitrary<infer A> ? A : never

interface TestAccount {
  readonly id: string
  readonly key: string
  readonly paid: boolean
  /** Was ever credited (grant or purchase): short of credits it is INSUFFICIENT_CREDITS, not a trial cap. */
  readonly funded: boolean
}

/** One concrete HTTP call: what was asked and what came back. */
interface PlannedCall {
  readonly account: TestAccount
  readonly ip: string
  readonly path: string
  readonly quoted: number
  readonly expectedCharge: number
  readonly fail: Failure | undefined
  readonly idempotencyKey: string | undefined
}

interface Outcome {
  readonly call: PlannedCall
  readonly reply: Reply
}

const operations = ["/v1/profnet/test-echo", "/v1/forum/test-echo", "/v1/profnet/test-resolve"] as const

/** Every answer a data call may legitimately get in these scenarios. */
const expectedCodes = new Set([
  "CONCURRENCY_LIMIT",
  "INSUFFICIENT_CREDITS",
  "TRIAL_CAP_EXCEEDED",
  "UPSTREAM_UNAVAILABLE",
  "NOT_FOUND",
  "INTERNAL",
  "IDEMPOTENCY_KEY_REUSED",
  "IDEMPOTENCY_KEY_REQUIRED",
  "RATE_LIMITED"
])

const stats = {
  scenarios: 0,
  calls: 0,
  batches: 0,
  largestBatch: 0,
  /** Calls that shared their account with an earlier call of the same concurrent batch. */
  sameAccountConcurrent: 0,
  retriesSameArguments: 0,
  retriesOtherArguments: 0,
  injectedFailures: 0,
  replays: 0,
  /** The most free credits any IP of a scenario used in a day (the cap is 200). */
  freeBudgetPeak: 0,
  byCode: {} as Record<string, number>
}

let counter = 0
const nextIp = (block: number) => {
  counter++
  return `10.${block}.${Math.floor(counter / 250) % 250}.${counter % 250}`
}

/** Turns generated specs into concrete calls, resolving retries against the calls planned before them. */
const planBatches = (
  scenario: Scenario,
  accounts: ReadonlyArray<TestAccount>,
  ips: ReadonlyArray<string>
) => {
  const planned: Array<PlannedCall> = []
  return scenario.batches.map((batch) =>
    batch.map((spec): PlannedCall => {
      const n = planned.length
      const earlier = planned.filter((call) => call.idempotencyKey !== undefined)
      const ip = ips[spec.ip % ips.length]!
      const original =
        (spec.idempotency.kind === "retry" || spec.idempotency.kind === "reuse") && earlier.length > 0
          ? earlier[spec.idempotency.of % earlier.length]
          : undefined
      let call: PlannedCall
      if (original !== undefined && spec.idempotency.kind === "retry") {
        stats.retriesSameArguments++
        call = { ...original, ip }
      } else {
        const account = original !== undefined ? original.account : accounts[spec.account % accounts.length]!
        const operation = operations[spec.operation]!
        const value = `v${stats.scenarios}-${n}`
        const refund = Math.min(spec.refund, spec.cost)
        const resolve = operation === "/v1/profnet/test-resolve"
        const params = resolve
          ? `value=${value}`
          : `value=${value}&cost=${spec.cost}&delay_ms=${spec.delayMs}` +
            (refund > 0 ? `&refund=${refund}` : "") +
            (spec.fail === undefined ? "" : `&fail=${spec.fail}`)
        const fail = resolve ? undefined : spec.fail
        if (original !== undefined) stats.retriesOtherArguments++
        call = {
          account,
          ip,
          path: `${operation}?${params}`,
          quoted: resolve ? 2 : spec.cost,
          expectedCharge: resolve ? 2 : spec.cost - refund,
          fail,
          idempotencyKey:
            original !== undefined
              ? original.idempotencyKey
              : spec.idempotency.kind === "none"
                ? undefined
                : crypto.randomUUID()
        }
      }
      if (call.fail !== undefined) stats.injectedFailures++
      planned.push(call)
      return call
    })
  )
}

/** What each reply must say on its own. */
const checkReply = ({ call, reply }: Outcome) => {
  const where = `${reply.status} ${call.path} ${JSON.stringify(reply.body)}`
  if (reply.status === 200) {
    assert.isUndefined(call.fail, `an injected failure succeeded: ${where}`)
    const receipt = reply.body.receipt
    assert.strictEqual(reply.headers.get("x-receipt-id"), receipt.id, where)
    assert.strictEqual(receipt.quoted, call.quoted, where)
    assert.strictEqual(receipt.charged, call.expectedCharge, where)
    assert.strictEqual(
      receipt.funding.free_tier + receipt.funding.grant + receipt.funding.balance,
      receipt.charged
    )
    if (call.account.paid) assert.strictEqual(receipt.funding.free_tier, 0, where)
    if (reply.headers.get("idempotent-replayed") === "true") {
      assert.strictEqual(reply.headers.get("x-credits-charged"), "0", where)
      assert.isTrue(receipt.replayed, where)
    } else {
      assert.strictEqual(reply.headers.get("x-credits-charged"), String(receipt.charged), where)
      assert.isFalse(receipt.replayed, where)
    }
    return
  }
  assert.isTrue(expectedCodes.has(reply.body.code), `unexpected answer: ${where}`)
  assert.isNull(reply.headers.get("x-credits-charged"), where)
  if (reply.status === 500) assert.strictEqual(call.fail, "defect", where)
  if (reply.body.code === "UPSTREAM_UNAVAILABLE") assert.strictEqual(call.fail, "upstream", where)
  if (reply.body.code === "NOT_FOUND") assert.strictEqual(call.fail, "not_found", where)
  if (reply.body.code === "IDEMPOTENCY_KEY_REQUIRED") assert.isTrue(call.account.paid, where)
  if (reply.body.code === "TRIAL_CAP_EXCEEDED")
    assert.isFalse(call.account.funded || call.account.paid, where)
  if (reply.body.code === "INSUFFICIENT_CREDITS")
    assert.isTrue(call.account.funded || call.account.paid, where)
}

const num = (value: unknown) => Number(value ?? 0)

/** The books, read by SQL over the whole database: every scenario so far must still add up. */
const checkLedger = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  const negative = yield* sql`SELECT id FROM accounts WHERE grant_credits < 0 OR balance_credits < 0`
  assert.deepStrictEqual(negative, [], "no account below zero")

  const leases = yield* sql`SELECT id FROM calls WHERE state = 'reserved'`
  assert.deepStrictEqual(leases, [], "no reservation outlives its call")
  const running = yield* sql`SELECT idem_key FROM idempotency_keys WHERE state = 'running'`
  assert.deepStrictEqual(running, [], "no idempotency key is left running")

  const broken = yield* sql`SELECT id FROM calls WHERE
    (state = 'released' AND (charged <> 0 OR charged_free <> 0 OR charged_grant <> 0 OR charged_balance <> 0))
    OR charged <> charged_free + charged_grant + charged_balance
    OR charged > quoted OR charged_free > reserved_free OR charged_grant > reserved_grant
    OR charged_balance > reserved_balance
    OR quoted <> reserved_free + reserved_grant + reserved_balance`
  assert.deepStrictEqual(broken, [], "every call's charge is within its reservation and adds up")

  const freeRows = yield* sql<{ readonly ip: string; readonly day: number; readonly credits_used: number }>`
    SELECT ip, day, credits_used FROM free_tier_usage`
  const freeCharged = yield* sql<{ readonly ip: string; readonly day: number; readonly credits: unknown }>`
    SELECT ip, day, SUM(CASE state WHEN 'settled' THEN charged_free WHEN 'reserved' THEN reserved_free ELSE 0 END)
      AS credits
    FROM calls GROUP BY ip, day`
  const used = new Map(freeRows.map((row) => [`${row.ip}/${row.day}`, num(row.credits_used)]))
  for (const row of freeRows)
    assert.isAtMost(num(row.credits_used), defaultPolicy.freeCreditsPerIpDay, row.ip)
  for (const row of freeCharged) {
    assert.strictEqual(used.get(`${row.ip}/${row.day}`) ?? 0, num(row.credits), `free budget of ${row.ip}`)
    used.delete(`${row.ip}/${row.day}`)
  }
  for (const [ipDay, credits] of used) assert.strictEqual(credits, 0, `free budget of ${ipDay} with no calls`)
  const days = yield* sql<{ readonly day: number; readonly credits_used: unknown; readonly per_ip: unknown }>`
    SELECT d.day, d.credits_used,
      (SELECT COALESCE(SUM(u.credits_used), 0) FROM free_tier_usage u WHERE u.day = d.day) AS per_ip
    FROM free_tier_days d`
  for (const day of days) assert.strictEqual(num(day.credits_used), num(day.per_ip), "the day's free total")

  const keys = yield* sql<{
    readonly account_id: string
    readonly idem_key: string
    readonly call_id: string
  }>`
    SELECT account_id, idem_key, call_id FROM idempotency_keys WHERE state = 'done'`
  const keyed = yield* sql<{
    readonly id: string
    readonly account_id: string
    readonly idempotency_key: string
  }>`
    SELECT id, account_id, idempotency_key FROM calls WHERE state = 'settled' AND idempotency_key IS NOT NULL`
  const settledByKey = new Map<string, Array<string>>()
  for (const call of keyed) {
    const id = `${call.account_id}/${call.idempotency_key}`
    settledByKey.set(id, [...(settledByKey.get(id) ?? []), call.id])
  }
  assert.strictEqual(keys.length, settledByKey.size, "a stored result for every keyed charge, and no other")
  for (const key of keys) {
    assert.deepStrictEqual(settledByKey.get(`${key.account_id}/${key.idem_key}`), [key.call_id], key.idem_key)
  }

  return yield* sql<{
    readonly id: string
    readonly grant_credits: unknown
    readonly balance_credits: unknown
    readonly granted: unknown
    readonly purchased: unknown
    readonly spent_free: unknown
    readonly spent_grant: unknown
    readonly spent_balance: unknown
    readonly charged: unknown
    readonly settled: unknown
  }>`SELECT a.id, a.grant_credits, a.balance_credits,
      (SELECT COALESCE(SUM(e.credits), 0) FROM credit_events e WHERE e.account_id = a.id AND e.kind = 'grant')
        AS granted,
      (SELECT COALESCE(SUM(e.credits), 0) FROM credit_events e WHERE e.account_id = a.id AND e.kind = 'balance')
        AS purchased,
      s.spent_free, s.spent_grant, s.spent_balance, s.charged, s.settled
    FROM accounts a LEFT JOIN (
      SELECT account_id, SUM(charged_free) AS spent_free, SUM(charged_grant) AS spent_grant,
        SUM(charged_balance) AS spent_balance, SUM(charged) AS charged, COUNT(*) AS settled
      FROM calls WHERE state = 'settled' GROUP BY account_id
    ) s ON s.account_id = a.id`
})

/** The API's view of each account of the scenario against the ledger and against the replies. */
const checkAccounts = (
  accounts: ReadonlyArray<TestAccount>,
  outcomes: ReadonlyArray<Outcome>,
  ips: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const sql = yield* SqlClient.SqlClient
    for (const row of yield* Effect.orDie(sql<{ readonly credits_used: number }>`
      SELECT credits_used FROM free_tier_usage WHERE ip IN ${sql.in(ips)}`)) {
      stats.freeBudgetPeak = Math.max(stats.freeBudgetPeak, num(row.credits_used))
    }
    const books = new Map((yield* Effect.orDie(checkLedger)).map((row) => [row.id, row]))
    for (const row of books.values()) {
      assert.strictEqual(
        num(row.granted) - num(row.grant_credits),
        num(row.spent_grant),
        `grant of ${row.id}`
      )
      assert.strictEqual(
        num(row.purchased) - num(row.balance_credits),
        num(row.spent_balance),
        `balance of ${row.id}`
      )
    }

    const originals = new Map<string, Reply>()
    for (const { call, reply } of outcomes) {
      if (reply.status !== 200 || reply.headers.get("idempotent-replayed") === "true") continue
      if (call.idempotencyKey === undefined) continue
      const id = `${call.account.id}/${call.idempotencyKey}`
      assert.isFalse(originals.has(id), `two charges for idempotency key ${call.idempotencyKey}`)
      originals.set(id, reply)
    }
    for (const { call, reply } of outcomes) {
      if (reply.headers.get("idempotent-replayed") !== "true") continue
      stats.replays++
      const original = originals.get(`${call.account.id}/${call.idempotencyKey}`)
      assert.strictEqual(
        reply.body.receipt.id,
        original?.body.receipt.id,
        "a replay shows the original receipt"
      )
      assert.deepStrictEqual(reply.body.data, original?.body.data)
    }

    for (const account of accounts) {
      const book = books.get(account.id)!
      const charged = outcomes.filter(
        ({ call, reply }) =>
          call.account === account &&
          reply.status === 200 &&
          reply.headers.get("idempotent-replayed") !== "true"
      )
      const sumOf = (pick: (receipt: any) => number) =>
        charged.reduce((sum, { reply }) => sum + pick(reply.body.receipt), 0)
      assert.strictEqual(
        num(book.settled),
        charged.length,
        `one settled call per charged reply of ${account.id}`
      )
      assert.strictEqual(
        num(book.charged),
        sumOf((r) => r.charged),
        `charges of ${account.id}`
      )
      assert.strictEqual(
        num(book.spent_free),
        sumOf((r) => r.funding.free_tier),
        `free of ${account.id}`
      )
      assert.strictEqual(
        num(book.spent_grant),
        sumOf((r) => r.funding.grant),
        `grant of ${account.id}`
      )
      assert.strictEqual(
        num(book.spent_balance),
        sumOf((r) => r.funding.balance),
        `balance of ${account.id}`
      )

      const listed: Array<{ readonly id: string; readonly charged: number }> = []
      let cursor: string | null = null
      do {
        const query = cursor === null ? "" : `&cursor=${cursor}`
        const page: Reply = yield* app.call(`/v1/receipts?limit=7${query}`, { key: account.key })
        assert.strictEqual(page.status, 200)
        listed.push(...page.body.receipts)
        cursor = page.body.cursor
      } while (cursor !== null)
      assert.strictEqual(
        listed.reduce((sum, receipt) => sum + receipt.charged, 0),
        num(book.charged),
        `listed receipts of ${account.id}`
      )
      assert.deepStrictEqual(
        listed.map((receipt) => receipt.id).sort(),
        charged.map(({ reply }) => reply.body.receipt.id).sort(),
        `every charge listed once for ${account.id}`
      )

      const usage = yield* app.call("/v1/usage", { key: account.key })
      assert.strictEqual(usage.body.balance?.grant ?? 0, num(book.grant_credits))
      assert.strictEqual(usage.body.balance?.purchased ?? 0, num(book.balance_credits))
    }

    yield* Effect.forEach(
      outcomes.filter(({ reply }) => reply.status === 200),
      ({ call, reply }) =>
        Effect.map(app.call(`/v1/receipts/${reply.body.receipt.id}`, { key: call.account.key }), (stored) => {
          assert.strictEqual(stored.status, 200)
          // Signed there always, the answer's only when asked.
          const { signature: _, ...unsigned } = stored.body
          assert.deepStrictEqual(unsigned, { ...reply.body.receipt, replayed: false })
        }),
      { concurrency: 8, discard: true }
    )
  })

const runScenario = (scenario: Scenario) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    stats.scenarios++
    const accounts: Array<TestAccount> = []
    for (const spec of scenario.accounts) {
      const minted = yield* app.mint(nextIp(77))
      const plan = spec.kind === "trialGrant" ? "trial" : spec.kind
      const paid = plan !== "trial"
      if (paid) yield* admin.setPlan(minted.account_id, plan)
      const granted = spec.grant > 0 && (spec.kind === "trialGrant" || (paid && spec.paidAlsoGranted))
      const purchased = paid && spec.balance > 0
      if (granted) yield* admin.credit(minted.account_id, spec.grant, "grant", "operator grant")
      if (purchased) yield* admin.credit(minted.account_id, spec.balance, "balance", "pack")
      accounts.push({ id: minted.account_id, key: minted.key, paid, funded: granted || purchased })
    }
    const ips = Array.from({ length: scenario.ips }, () => nextIp(88))

    const outcomes: Array<Outcome> = []
    for (const batch of planBatches(scenario, accounts, ips)) {
      stats.batches++
      stats.calls += batch.length
      stats.largestBatch = Math.max(stats.largestBatch, batch.length)
      stats.sameAccountConcurrent += batch.length - new Set(batch.map((call) => call.account.id)).size
      const replies = yield* Effect.forEach(
        batch,
        (call) =>
          Effect.map(
            app.call(call.path, {
              key: call.account.key,
              ip: call.ip,
              ...(call.idempotencyKey === undefined ? {} : { idempotencyKey: call.idempotencyKey })
            }),
            (reply): Outcome => ({ call, reply })
          ),
        { concurrency: "unbounded" }
      )
      for (const outcome of replies) {
        const code = outcome.reply.status === 200 ? "200" : String(outcome.reply.body.code)
        stats.byCode[code] = (stats.byCode[code] ?? 0) + 1
        checkReply(outcome)
      }
      outcomes.push(...replies)
    }
    yield* checkAccounts(accounts, outcomes, ips)
  }).pipe(Effect.orDie)

describe(`metering invariants under concurrency (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "money is conserved, the free budget holds, one charge per idempotency key, no lease left behind",
      () =>
        Effect.gen(function* () {
          const context = yield* Effect.context<TestApp | Admin | SqlClient.SqlClient>()
          const started = performance.now()
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(scenarioArbitrary, (scenario) =>
                Effect.runPromiseWith(context)(runScenario(scenario))
              ),
              // Concurrent outcomes do not replay from a seed, so shrinking would chase noise.
              { numRuns, endOnFailure: true }
            )
          )
          const seconds = ((performance.now() - started) / 1000).toFixed(1)
          console.log(`metering invariants (${storeName}, ${seconds} s):`, JSON.stringify(stats))
          assert.isAbove(stats.byCode["200"] ?? 0, 0)
          assert.isAbove(stats.byCode.CONCURRENCY_LIMIT ?? 0, 0)
          assert.isAbove(stats.replays, 0)
        }),
      120_000
    )
  })
})
