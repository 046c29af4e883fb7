import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.64")

const mcpHeaders = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream"
}

/** Problems worded for whoever reads them, over real HTTP and MCP. */
describe(`problem wording on each surface (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("an empty key_id is INVALID_INPUT naming key_id, on REST and MCP; nothing is revoked", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const session = yield* signIn(app, "empty-key-id@example.com", { key, ip })
        for (const path of ["/v1/keys/revoke", "/v1/keys/rotate"]) {
          const reply = yield* post(app, path, { key_id: "" }, { key: session.management_token, ip })
          assert.strictEqual(reply.status, 400, JSON.stringify(reply.body))
          assert.strictEqual(reply.body.code, "INVALID_INPUT")
          assert.strictEqual(reply.body.param, "key_id")
        }
        const client = yield* connect(`${app.url}/mcp`, { key: session.management_token, ip }, modes[0])
        const tool = yield* callTool(client, "revoke_key", { key_id: "" })
        assert.isTrue(tool.isError)
        assert.strictEqual(tool.problem.code, "INVALID_INPUT")
        assert.strictEqual(tool.problem.param, "key_id")
        const usage = yield* app.call("/v1/usage", { key, ip })
        assert.strictEqual(usage.status, 200, "the key still works")
      }).pipe(Effect.scoped)
    )

    it.effect("the same bad bearer gets the same message on REST, MCP and the claim page", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const messages = new Set<string>()
        for (const bearer of ["svc_trial_bogus", "garbage", "svcm_bogus", `svc_${"x".repeat(31)}`]) {
          const rest = yield* app.call("/v1/usage", { key: bearer, ip })
          const data = yield* app.call("/v1/profnet/test-echo?value=x", { key: bearer, ip })
          const mcp = yield* app.call("/mcp", {
            method: "POST",
            key: bearer,
            ip,
            headers: mcpHeaders,
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
          })
          for (const reply of [rest, data, mcp]) {
            assert.strictEqual(reply.status, 401, `${bearer}: ${JSON.stringify(reply.body)}`)
            assert.strictEqual(reply.body.code, "UNAUTHORIZED", bearer)
            messages.add(reply.body.message)
          }
        }
        assert.strictEqual(messages.size, 1, [...messages].join("\n"))
        const [message] = [...messages]
        assert.notInclude(message!, "expected svc_")
        // The claim page answers a malformed key with the very same sentence.
        const claim = yield* app.call("/claim", {
          method: "POST",
          ip,
          headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://svc.test" },
          body: new URLSearchParams({ email: "claimer@example.com", key: "svc_trial_bogus" }).toString()
        })
        assert.strictEqual(claim.status, 400)
        assert.include(
          String(claim.body).replaceAll("&#39;", "'"),
          message!.split(":")[0]!,
          "the claim page says the same"
        )
        assert.notInclude(String(claim.body), "starts with svc_trial_")
      })
    )

    it.effect("a mint refused by its per-IP limit offers nothing: paying cannot lift it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        let refused: { status: number; body: any } | undefined
        for (let i = 0; i < 50 && refused === undefined; i++) {
          const reply = yield* app.call("/v1/keys/mint", { method: "POST", ip })
          if (reply.status === 429) refused = reply
        }
        assert.isDefined(refused, "the mint limit is reached")
        assert.strictEqual(refused!.body.code, "RATE_LIMITED")
        assert.isUndefined(refused!.body.offer)
        assert.isUndefined(refused!.body.upgrade_url)
      })
    )

    it.effect("MCP tools' messages name MCP tools where REST's name routes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const session = yield* signIn(app, "wording@example.com", { key, ip })
        const rest = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: "key_nosuchkey" },
          { key: session.management_token, ip }
        )
        assert.strictEqual(rest.body.code, "NOT_FOUND")
        assert.include(rest.body.message, "GET /v1/keys")
        const client = yield* connect(`${app.url}/mcp`, { key: session.management_token, ip }, modes[0])
        const tool = yield* callTool(client, "revoke_key", { key_id: "key_nosuchkey" })
        assert.strictEqual(tool.problem.code, "NOT_FOUND")
        assert.include(tool.problem.message, "list_keys")
        assert.notInclude(tool.problem.message, "/v1/")
        assert.strictEqual(tool.problem.detail, tool.problem.message)
      }).pipe(Effect.scoped)
    )

    it.effect("pages name pages, not REST routes: portal, upgrade, unknown account", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const expired = yield* app.call("/portal?session=nope", { ip })
        assert.strictEqual(expired.status, 404)
        assert.include(String(expired.body), "/dashboard/billing")
        const upgrade = yield* app.call("/upgrade", { ip })
        const unknown = yield* app.call("/upgrade", {
          method: "POST",
          ip,
          headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://svc.test" },
          body: new URLSearchParams({ pack: "flex", account: "acct_nobody" }).toString()
        })
        assert.strictEqual(unknown.status, 404)
        for (const page of [expired, upgrade, unknown])
          assert.notMatch(String(page.body), /(POST|GET) \/v1\/(portal|usage|apps)/)
      })
    )

    it.effect("a parameter left out is said to be required, not a 'Missing key'", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const data = yield* app.call("/v1/profnet/test-echo", { key, ip })
        assert.strictEqual(data.status, 400, data.text)
        assert.strictEqual(data.body.param, "value")
        assert.strictEqual(data.body.message, "`value` is required.")
        const session = yield* signIn(app, "required-param@example.com", { key, ip })
        const body = yield* post(app, "/v1/keys/revoke", {}, { key: session.management_token, ip })
        assert.strictEqual(body.status, 400, body.text)
        assert.strictEqual(body.body.param, "key_id")
        assert.strictEqual(body.body.message, "`key_id` is required.")
        for (const reply of [data, body]) assert.notInclude(reply.text, "Missing key")
      })
    )

    it.effect(
      "a key cap's refusal names who can lift it, resets only day and month caps, and sells nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const session = yield* signIn(app, "cap-wording@example.com", { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const token = session.management_token
          const daily = yield* post(
            app,
            "/v1/keys",
            { label: "daily", spend_cap_credits: 10, cap_period: "day", may_delegate: true },
            { key: token, ip }
          )
          assert.strictEqual(daily.status, 201, daily.text)
          const child = yield* post(
            app,
            "/v1/keys/child",
            { label: "sub", spend_cap_credits: 3, cap_period: "total" },
            { key: daily.body.key, ip }
          )
          assert.strictEqual(child.status, 201, child.text)
          const over = (key: string, idempotencyKey: string, cost = 4) =>
            app.call(`/v1/profnet/test-echo?value=over-${cost}&cost=${cost}`, { key, ip, idempotencyKey })

          // An ordinary key: the account's owner lifts it, with the route, the tool and the page.
          const owned = yield* over(daily.body.key, "cap-wording-0001")
          assert.strictEqual(owned.status, 200, owned.text)
          const ownerCap = yield* over(daily.body.key, "cap-wording-0002", 8)
          assert.strictEqual(ownerCap.status, 402, ownerCap.text)
          assert.strictEqual(ownerCap.body.limit, "key_cap")
          assert.include(ownerCap.body.message, "account's owner")
          assert.include(ownerCap.body.message, "POST /v1/keys/update")
          assert.include(ownerCap.body.message, "update_key")
          assert.include(ownerCap.body.message, "/dashboard/keys")
          assert.isString(ownerCap.body.cap_resets_at, "a day cap resets")
          assert.include(ownerCap.body.message, "cap_resets_at")

          // A child key (its own total cap of 3 binds, the parent's has 6): its parent lifts it; a
          // total cap never resets; nothing is for sale.
          const childCap = yield* over(child.body.key, "cap-wording-0003")
          assert.strictEqual(childCap.status, 402, childCap.text)
          assert.strictEqual(childCap.body.limit, "key_cap")
          assert.include(childCap.body.message, daily.body.key_id)
          assert.include(childCap.body.message, "POST /v1/keys/child/update")
          assert.include(childCap.body.message, "update_child_key")
          assert.notInclude(childCap.body.message, "update_key tool")
          assert.notProperty(childCap.body, "cap_resets_at")
          assert.notInclude(childCap.body.message, "reset")
          for (const refused of [ownerCap, childCap]) {
            assert.deepStrictEqual(refused.body.offer.packs, [], "buying cannot lift a key's cap")
            assert.deepStrictEqual(refused.body.offer.rails, [])
            assert.notMatch(refused.body.message, /buy a pack|upgrade_url/i)
            assert.strictEqual(refused.body.offer.resume.action, "retry_same_idempotency_key")
            assert.notInclude(refused.body.offer.resume.detail, "POST /v1/keys/update")
          }
        })
    )

    it.effect("a trial's spent free budget names claim_url and its free credits before buying", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const minted = yield* app.mint(ip)
        const refused = yield* app.call("/v1/profnet/test-echo?value=big&cost=1000", {
          key: minted.key,
          ip,
          idempotencyKey: "trial-claim-0001"
        })
        assert.strictEqual(refused.body.code, "TRIAL_CAP_EXCEEDED", refused.text)
        assert.strictEqual(refused.body.claim_url, `http://svc.test/claim?account=${minted.account_id}`)
        const message = refused.body.message as string
        assert.include(message, "claim_url")
        assert.include(message, "10,000")
        assert.isBelow(message.indexOf("claim_url"), message.indexOf("buy a pack"))
        // Once claimed, there is nothing to claim: the problem no longer offers it.
        yield* signIn(app, "trial-claimer@example.com", { key: minted.key, ip })
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.orDie(sql`UPDATE accounts SET grant_credits = 0 WHERE id = ${minted.account_id}`)
        )
        const claimed = yield* app.call("/v1/profnet/test-echo?value=big&cost=1000", {
          key: minted.key,
          ip,
          idempotencyKey: "trial-claim-0002"
        })
        assert.notProperty(claimed.body, "claim_url", claimed.text)
      })
    )
  })
})
