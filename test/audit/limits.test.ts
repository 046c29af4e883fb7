import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { signIn } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const policy = { ...defaultPolicy, auditReadsPerAccount: { limit: 3, windowMs: 60_000 } }

/** Audit 2 (Low): audit reads were unlimited. Every surface reads through the one limited service. */
describe(`audit reads are limited per account (${storeName})`, () => {
  layer(testApp(testOperations, { policy }), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("REST, MCP and the dashboard share AUDIT_READS_PER_ACCOUNT: RATE_LIMITED past it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = "10.68.1.1"
        const minted = yield* app.mint(ip)
        const { management_token: token } = yield* signIn(app, "audit-reads@example.com", {
          key: minted.key,
          ip
        })
        assert.strictEqual((yield* app.call("/v1/audit", { key: token, ip })).status, 200)
        const client = yield* connect(`${app.url}/mcp`, { key: token, ip }, modes[0])
        assert.isFalse((yield* callTool(client, "list_audit_events", {})).isError)
        const page = yield* app.call(`/dashboard/activity?account=${minted.account_id}`, {
          ip,
          headers: { cookie: `svc_session=${token}` }
        })
        assert.strictEqual(page.status, 200)
        const limited = yield* app.call("/v1/audit", { key: token, ip })
        assert.strictEqual(limited.status, 429, JSON.stringify(limited.body))
        assert.strictEqual(limited.body.code, "RATE_LIMITED")
        assert.isAbove(limited.body.retry_after_seconds, 0)
        const viaMcp = yield* callTool(client, "list_audit_events", {})
        assert.strictEqual(viaMcp.problem.code, "RATE_LIMITED")
        const dashboard = yield* app.call(`/dashboard/activity?account=${minted.account_id}`, {
          ip,
          headers: { cookie: `svc_session=${token}` }
        })
        assert.strictEqual(dashboard.status, 429)
        assert.include(dashboard.body, "Too many reads")
        // Another account reads its own.
        const other = yield* app.mint("10.68.1.2")
        const otherToken = (yield* signIn(app, "audit-reads-2@example.com", {
          key: other.key,
          ip: "10.68.1.2"
        })).management_token
        assert.strictEqual((yield* app.call("/v1/audit", { key: otherToken, ip: "10.68.1.2" })).status, 200)
      }).pipe(Effect.scoped)
    )
  })
})
