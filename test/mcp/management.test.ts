import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { callTool, connect, modes } from "./support.ts"

const freshIp = ipSequence("10.62")
const managementToolNames = [
  "list_keys",
  "create_key",
  "update_key",
  "rotate_key",
  "revoke_key",
  "set_balance_alert",
  "billing_portal",
  "list_audit_events"
]
/** A spend key's catalogue: the data tools and get_usage (the child-key tools only with may_delegate). */
const dataToolNames = [...testOperations.map((operation) => operation.id), "get_usage"]

describe(`MCP management tools (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    for (const mode of modes) {
      it.effect(`${mode.name}: a spend key has the data catalogue; a management token adds management`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const spending = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
          const spendTools = (yield* Effect.promise(() => spending.listTools())).tools
          assert.deepStrictEqual(
            spendTools.map((tool) => tool.name),
            dataToolNames
          )
          const refused = yield* Effect.promise(() =>
            spending.callTool({ name: "list_keys", arguments: {} }).then(
              (result) => result.isError === true,
              () => true
            )
          )
          assert.isTrue(refused, "a spend key cannot call list_keys")
          assert.notInclude(spending.getInstructions() ?? "", "list_keys")

          const { management_token } = yield* signIn(app, `catalogue-${mode.era}@example.com`, { ip })
          for (const path of ["/mcp", "/mcp/forum"]) {
            const managing = yield* connect(`${app.url}${path}`, { key: management_token, ip }, mode)
            const tools = (yield* Effect.promise(() => managing.listTools())).tools
            const names = tools.map((tool) => tool.name)
            assert.include(managing.getInstructions() ?? "", "list_keys")
            assert.deepStrictEqual(names.slice(-managementToolNames.length), managementToolNames, path)
            assert.include(names, "get_usage")
            const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
            assert.deepStrictEqual((byName.list_keys!.outputSchema as any).required, ["account_id", "keys"])
            assert.includeMembers((byName.create_key!.outputSchema as any).required, ["key_id", "key"])
            assert.deepStrictEqual((byName.rotate_key!.inputSchema as any).required, ["key_id"])
            assert.deepStrictEqual((byName.set_balance_alert!.inputSchema as any).required, ["threshold"])
            const accountId = (byName.create_key!.inputSchema as any).properties.account_id
            assert.strictEqual(accountId.type, "string")
            assert.notInclude(accountId.description, "Query")
            assert.isTrue(byName.list_keys!.annotations?.readOnlyHint)
            assert.isFalse(byName.create_key!.annotations?.readOnlyHint)
            assert.isFalse(byName.create_key!.annotations?.destructiveHint)
            assert.isTrue(byName.rotate_key!.annotations?.destructiveHint)
            assert.isTrue(byName.revoke_key!.annotations?.destructiveHint)
            assert.isTrue(byName.revoke_key!.annotations?.idempotentHint)
            assert.isTrue(byName.set_balance_alert!.annotations?.idempotentHint)
            assert.isTrue(byName.get_usage!.annotations?.readOnlyHint)
          }
        })
      )
    }

    it.effect("create, list, rotate, revoke and alert, answered as REST answers", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const minted = yield* app.mint(ip)
        const { management_token: token } = yield* signIn(app, "keys-owner@example.com", {
          key: minted.key,
          ip
        })
        const client = yield* connect(`${app.url}/mcp`, { key: token, ip }, modes[0])

        const listed = yield* callTool(client, "list_keys", {})
        assert.isFalse(listed.isError, listed.text)
        assert.strictEqual(listed.structured.account_id, minted.account_id)
        assert.strictEqual(listed.structured.keys.length, 1)
        const rest = yield* app.call("/v1/keys", { key: token, ip })
        assert.deepStrictEqual(listed.structured, rest.body)
        assert.deepStrictEqual(JSON.parse(listed.text!), rest.body)
        const mintedKeyId = listed.structured.keys[0].key_id

        const created = yield* callTool(client, "create_key", { label: "ci" })
        assert.isFalse(created.isError, created.text)
        assert.strictEqual(created.structured.label, "ci")
        assert.strictEqual(created.structured.grant_credits, 0)
        assert.match(created.structured.key, /^svc_/)
        assert.strictEqual((yield* app.call("/v1/usage", { key: created.structured.key, ip })).status, 200)

        const rotated = yield* callTool(client, "rotate_key", { key_id: mintedKeyId })
        assert.isFalse(rotated.isError, rotated.text)
        assert.strictEqual(rotated.structured.replaces, mintedKeyId)
        assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 401)
        assert.strictEqual((yield* app.call("/v1/usage", { key: rotated.structured.key, ip })).status, 200)

        const revoked = yield* callTool(client, "revoke_key", { key_id: created.structured.key_id })
        assert.isFalse(revoked.isError, revoked.text)
        assert.strictEqual(revoked.structured.key_id, created.structured.key_id)
        assert.isString(revoked.structured.revoked_at)
        assert.strictEqual((yield* app.call("/v1/usage", { key: created.structured.key, ip })).status, 401)

        const alert = yield* callTool(client, "set_balance_alert", { threshold: 500 })
        assert.isFalse(alert.isError, alert.text)
        assert.strictEqual(alert.structured.account_id, minted.account_id)
        assert.strictEqual(alert.structured.threshold, 500)
        assert.isNumber(alert.structured.balance_credits)

        // The same link REST's POST /v1/portal gives: the service's own /portal (no Stripe here).
        const portal = yield* callTool(client, "billing_portal", {})
        assert.isFalse(portal.isError, portal.text)
        assert.strictEqual(portal.structured.account_id, minted.account_id)
        assert.match(portal.structured.url, /^http:\/\/svc\.test\/portal\?session=[0-9A-Za-z]{43}$/)

        const after = yield* callTool(client, "list_keys", {})
        assert.deepStrictEqual(
          Object.fromEntries(after.structured.keys.map((k: any) => [k.key_id, k.revoked_at !== null])),
          {
            [mintedKeyId]: true,
            [created.structured.key_id]: true,
            [rotated.structured.key_id]: false
          }
        )

        // The audit log: the same page as REST's, the changes above made by the token's email.
        const audit = yield* callTool(client, "list_audit_events", { limit: 100 })
        assert.isFalse(audit.isError, audit.text)
        const restAudit = yield* app.call("/v1/audit?limit=100", { key: token, ip })
        assert.deepStrictEqual(audit.structured, restAudit.body)
        assert.deepStrictEqual(
          audit.structured.events.map((event: any) => [
            event.action,
            event.actor.kind,
            event.actor.id,
            event.ip
          ]),
          [
            ...["alert.set", "key.revoked", "key.rotated", "key.created", "signed_in"].map((action) => [
              action,
              "email",
              "keys-owner@example.com",
              ip
            ]),
            // The mint's key, made before anyone signed in.
            ["key.created", "service", "svc", ip]
          ]
        )
        const paged = yield* callTool(client, "list_audit_events", { limit: 2 })
        assert.strictEqual(paged.structured.events.length, 2)
        const next = yield* callTool(client, "list_audit_events", {
          limit: 2,
          cursor: paged.structured.next_cursor
        })
        assert.deepStrictEqual(next.structured.events, audit.structured.events.slice(2, 4))
        const badLimit = yield* callTool(client, "list_audit_events", { limit: "2" })
        assert.strictEqual(badLimit.problem.code, "INVALID_INPUT")
        assert.strictEqual(badLimit.problem.param, "limit")

        // The token governs one account: it spends directly, as on REST.
        const usage = yield* callTool(client, "get_usage", {})
        assert.isFalse(usage.isError, usage.text)
        assert.strictEqual(usage.structured.account_id, minted.account_id)
      })
    )

    it.effect("an unknown or foreign key is NOT_FOUND on key_id; a bad argument is INVALID_INPUT", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const mine = yield* signIn(app, "mine@example.com", { ip })
        const theirs = yield* signIn(app, "theirs@example.com", { ip: freshIp() })
        const foreign = yield* post(app, "/v1/keys", {}, { key: theirs.management_token, ip })
        assert.strictEqual(foreign.status, 201)
        const client = yield* connect(`${app.url}/mcp/profnet`, { key: mine.management_token, ip }, modes[1])

        for (const [tool, keyId] of [
          ["revoke_key", "key_doesnotexist"],
          ["rotate_key", "key_doesnotexist"],
          ["revoke_key", foreign.body.key_id],
          ["rotate_key", foreign.body.key_id]
        ] as const) {
          const result = yield* callTool(client, tool, { key_id: keyId })
          assert.isTrue(result.isError, tool)
          assert.isUndefined(result.structured)
          assert.include(result.text, "NOT_FOUND")
          assert.include(result.text, "key_id")
          assert.strictEqual(result.problem.code, "NOT_FOUND")
          assert.strictEqual(result.problem.param, "key_id")
          assert.strictEqual(result.problem.status, 404)
        }
        const rest = yield* post(
          app,
          "/v1/keys/revoke",
          { key_id: "key_doesnotexist" },
          { key: mine.management_token, ip }
        )
        const mcp = yield* callTool(client, "revoke_key", { key_id: "key_doesnotexist" })
        // The same problem, but worded for an agent: the tool that lists keys, not REST's route.
        const { message, detail, ...same } = mcp.problem
        const { message: restMessage, detail: _, ...restSame } = rest.body
        assert.deepStrictEqual(same, restSame)
        assert.strictEqual(message, restMessage.replace("GET /v1/keys", "the list_keys tool"))
        assert.strictEqual(detail, message)
        // The foreign key still works.
        assert.strictEqual((yield* app.call("/v1/usage", { key: foreign.body.key, ip })).status, 200)

        const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string, string]> = [
          ["set_balance_alert", { threshold: -1 }, "/v1/alert", "threshold"],
          ["set_balance_alert", { threshold: 1.5 }, "/v1/alert", "threshold"],
          ["set_balance_alert", {}, "/v1/alert", "threshold"],
          ["create_key", { label: "" }, "/v1/keys", "label"],
          ["create_key", { label: "x".repeat(65) }, "/v1/keys", "label"],
          ["rotate_key", {}, "/v1/keys/rotate", "key_id"],
          ["revoke_key", { key_id: 42 }, "/v1/keys/revoke", "key_id"]
        ]
        for (const [tool, args, path, param] of cases) {
          const result = yield* callTool(client, tool, args)
          assert.isTrue(result.isError, `${tool} ${JSON.stringify(args)}`)
          assert.strictEqual(result.problem.code, "INVALID_INPUT")
          assert.strictEqual(result.problem.param, param)
          const restReply = yield* post(app, path, args, { key: mine.management_token, ip })
          assert.strictEqual(restReply.status, 400)
          assert.deepStrictEqual(result.problem, restReply.body, `${tool} ${JSON.stringify(args)}`)
        }
      })
    )

    it.effect("two accounts under one email: connects; without account_id AUTH_REQUIRED lists both", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const first = yield* signIn(app, "two@example.com", { ip })
        assert.strictEqual(first.accounts.length, 1)
        const trialAccount = first.accounts[0]!.account_id
        const minted = yield* app.mint(ip)
        const second = yield* signIn(app, "two@example.com", { key: minted.key, ip: freshIp() })
        assert.strictEqual(second.claimed, minted.account_id)
        const both = [trialAccount, minted.account_id].sort()
        assert.deepStrictEqual(second.accounts.map((account) => account.account_id).sort(), both)
        const token = second.management_token

        const client = yield* connect(`${app.url}/mcp`, { key: token, ip }, modes[0])
        const names = (yield* Effect.promise(() => client.listTools())).tools.map((tool) => tool.name)
        assert.includeMembers(names, [...managementToolNames, "get_usage", "testEcho"])

        for (const [tool, args] of [
          ["list_keys", {}],
          ["create_key", { label: "which" }],
          ["set_balance_alert", { threshold: 10 }],
          ["get_usage", {}],
          ["testEcho", { value: "hello" }]
        ] as const) {
          const result = yield* callTool(client, tool, args)
          assert.isTrue(result.isError, tool)
          assert.strictEqual(result.problem.code, "AUTH_REQUIRED", tool)
          assert.deepStrictEqual([...result.problem.account_ids].sort(), both, tool)
        }
        const restRefusal = yield* app.call("/v1/keys", { key: token, ip })
        const mcpRefusal = yield* callTool(client, "list_keys", {})
        assert.deepStrictEqual(mcpRefusal.problem, restRefusal.body)

        for (const accountId of both) {
          const listed = yield* callTool(client, "list_keys", { account_id: accountId })
          assert.isFalse(listed.isError, listed.text)
          assert.strictEqual(listed.structured.account_id, accountId)
          const alert = yield* callTool(client, "set_balance_alert", { threshold: 7, account_id: accountId })
          assert.isFalse(alert.isError, alert.text)
          assert.strictEqual(alert.structured.account_id, accountId)
        }
        const created = yield* callTool(client, "create_key", { label: "trial", account_id: trialAccount })
        assert.isFalse(created.isError, created.text)
        // A key of one governed account is NOT_FOUND when the other account is named.
        const crossed = yield* callTool(client, "revoke_key", {
          key_id: created.structured.key_id,
          account_id: minted.account_id
        })
        assert.strictEqual(crossed.problem.code, "NOT_FOUND")
        assert.strictEqual(crossed.problem.param, "key_id")

        // An account this sign-in does not govern is refused like REST refuses it.
        const outsider = yield* app.mint(ip)
        const foreign = yield* callTool(client, "list_keys", { account_id: outsider.account_id })
        assert.strictEqual(foreign.problem.code, "AUTH_REQUIRED")
        const restForeign = yield* app.call(`/v1/keys?account_id=${outsider.account_id}`, { key: token, ip })
        assert.deepStrictEqual(foreign.problem, restForeign.body)
      })
    )

    it.effect(
      "a suspended account's token still manages but cannot spend; a signed-out token is refused",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = freshIp()
          const signedIn = yield* signIn(app, "suspended@example.com", { ip })
          const accountId = signedIn.accounts[0]!.account_id
          yield* Effect.orDie(admin.setState(accountId, "suspended"))
          const client = yield* connect(`${app.url}/mcp`, { key: signedIn.management_token, ip }, modes[0])
          const usage = yield* callTool(client, "get_usage", {})
          assert.strictEqual(usage.problem.code, "UNAUTHORIZED")
          const rest = yield* app.call("/v1/usage", { key: signedIn.management_token, ip })
          assert.strictEqual(rest.status, 401)
          assert.deepStrictEqual(usage.problem, rest.body)
          const listed = yield* callTool(client, "list_keys", {})
          assert.isFalse(listed.isError, listed.text)
          assert.strictEqual(listed.structured.account_id, accountId)

          const logout = yield* post(app, "/v1/auth/logout", {}, { key: signedIn.management_token, ip })
          assert.strictEqual(logout.status, 200)
          const error = yield* Effect.flip(
            Effect.tryPromise(() => client.callTool({ name: "list_keys", arguments: {} }))
          )
          assert.include(String(error.cause), "401")
        })
    )
  })
})
