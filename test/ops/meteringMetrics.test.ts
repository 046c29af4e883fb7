import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { operatorHeaders, scrapeMetrics as scrape, seriesValue } from "../support/metrics.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.47")
describe(`metering metrics (${storeName})`, () => {
  layer(testApp(testOperations, { policy: { ...defaultPolicy, freeCreditsPerIpDay: 6 } }), {
    timeout: 60_000
  })((it) => {
    it.effect(
      "outcomes, credits by funding source, rate refusals and free-budget exhaustion are counted",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const before = yield* scrape
          const ok = 'svc_metered_calls_total{operation="testEcho",outcome="ok"}'
          const replayed = 'svc_metered_calls_total{operation="testEcho",outcome="replayed"}'
          const rateLimited = 'svc_metered_calls_total{operation="testEcho",outcome="RATE_LIMITED"}'
          const free = 'svc_credits_charged_total{platform="profnet",source="free_tier"}'
          const balance = 'svc_credits_charged_total{platform="profnet",source="balance"}'
          const refusals = 'svc_limit_refusals_total{limit="rate"}'

          // A trial key: 4 free credits, then a replay, then the free budget (6) is used up.
          const trialIp = freshIp()
          const { key: trial } = yield* app.mint(trialIp)
          const first = yield* app.call("/v1/profnet/test-echo?value=a&cost=4", {
            key: trial,
            ip: trialIp,
            idempotencyKey: "metrics-one"
          })
          assert.strictEqual(first.status, 200, JSON.stringify(first.body))
          const again = yield* app.call("/v1/profnet/test-echo?value=a&cost=4", {
            key: trial,
            ip: trialIp,
            idempotencyKey: "metrics-one"
          })
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          const exhausted = yield* app.call("/v1/profnet/test-echo?value=b&cost=4", {
            key: trial,
            ip: trialIp
          })
          assert.strictEqual(exhausted.body.code, "TRIAL_CAP_EXCEEDED")
          assert.isUndefined(
            exhausted.body.param,
            "the IP's free credits of the day, not a trial cap on a parameter"
          )

          // A paid key: charged from the balance, then over its per-minute allowance.
          const paidIp = freshIp()
          const { key: paid } = yield* paidKey(paidIp, 1000)
          for (let i = 0; i < defaultPolicy.ratePerMinute.flex; i++) {
            const reply = yield* app.call("/v1/profnet/test-echo?value=x&cost=2", {
              key: paid,
              ip: paidIp,
              idempotencyKey: crypto.randomUUID()
            })
            assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
          }
          const limited = yield* app.call("/v1/profnet/test-echo?value=x&cost=2", {
            key: paid,
            ip: paidIp,
            idempotencyKey: crypto.randomUUID()
          })
          assert.strictEqual(limited.body.code, "RATE_LIMITED")

          const after = yield* scrape
          const delta = (series: string) => seriesValue(after, series) - seriesValue(before, series)
          assert.strictEqual(delta(ok), 1 + defaultPolicy.ratePerMinute.flex)
          assert.strictEqual(delta(replayed), 1)
          assert.strictEqual(
            delta('svc_metered_calls_total{operation="testEcho",outcome="TRIAL_CAP_EXCEEDED"}'),
            1
          )
          assert.strictEqual(delta('svc_free_budget_exhausted_total{budget="ip"}'), 1)
          assert.strictEqual(delta(rateLimited), 1)
          assert.strictEqual(delta(refusals), 1)
          assert.strictEqual(delta(free), 4)
          assert.strictEqual(delta(balance), 2 * defaultPolicy.ratePerMinute.flex)
          assert.match(
            after,
            /svc_http_requests_total\{route="\/v1\/profnet\/test-echo",method="GET",status="429"\} \d+/
          )
          assert.notInclude(after, trial)
          assert.notInclude(after, paid)
        })
    )
  })
})

describe(`METRICS=off (${storeName})`, () => {
  layer(testApp(testOperations, { metrics: false }), { timeout: 60_000 })((it) => {
    it.effect("serves no /metrics", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const reply = yield* app.call("/metrics", { headers: operatorHeaders })
        assert.strictEqual(reply.status, 404)
      })
    )
  })
})
