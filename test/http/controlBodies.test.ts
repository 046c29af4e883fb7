import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { post, signIn } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { assertInvalid } from "../support/assertions.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.64")

/**
 * Audit 2 (Low): a control character in a JSON body's string answered 500 INTERNAL on these routes
 * (NUL is what PostgreSQL text refuses). Every JSON body is now judged where it is decoded: 400
 * INVALID_INPUT naming the member, before the route reads it, and nothing changes.
 */
describe(`control characters in JSON bodies (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("every body route answers INVALID_INPUT naming the member, on both bearers", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* app.mint(ip)
        const { management_token: token } = yield* signIn(app, "nul-bodies@example.com", { key, ip })
        const managed = { key: token, ip }
        const spending = { key, ip }
        const cases = [
          ["/v1/keys", { label: "ci\u0000" }, managed, "label"],
          ["/v1/keys/revoke", { key_id: "key_\u0000" }, managed, "key_id"],
          ["/v1/keys/rotate", { key_id: "key_a\u0000" }, managed, "key_id"],
          ["/v1/keys/update", { key_id: "key_a", label: "x\u0000y" }, managed, "label"],
          ["/v1/keys/update", { key_id: "key_a", platforms: ["forum\u0000"] }, managed, "platforms"],
          ["/v1/keys/child", { spend_cap_credits: 5, label: "\u0000" }, spending, "label"],
          ["/v1/keys/child/revoke", { key_id: "key_\u0000" }, spending, "key_id"],
          ["/v1/webhooks/delete", { webhook_id: "wh_\u0000" }, managed, "webhook_id"],
          ["/v1/webhooks/test", { webhook_id: "wh_\u001b[2J" }, managed, "webhook_id"],
          ["/v1/apps/revoke", { app_id: "\u0000" }, managed, "app_id"],
          ["/v1/auth/tokens/revoke", { token_id: "tok_\u0000" }, managed, "token_id"],
          ["/v1/auth/email/start", { email: "a\u0000@example.com" }, { ip }, "email"],
          ["/v1/recover", { email: "nul-bodies\u0000@example.com" }, { ip }, "email"],
          ["/v1/keys", { "la\u0000bel": "ci" }, managed, "la\\u0000bel"]
        ] as const
        for (const [path, body, as, param] of cases) {
          const reply = yield* post(app, path, body, as)
          assertInvalid(reply, param, /control character \(U\+00(00|1B)\)/)
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json", path)
        }
        // Nothing was made: the account still has its one key, and authentication still answers first.
        assert.strictEqual((yield* app.call("/v1/keys", managed)).body.keys.length, 1)
        assert.strictEqual(
          (yield* post(app, "/v1/keys/revoke", { key_id: "key_\u0000" }, { ip })).status,
          401
        )
        // Printable text, including non-ASCII, is what it was.
        assert.strictEqual((yield* post(app, "/v1/keys", { label: "étiquette ✓" }, managed)).status, 201)
      })
    )

    for (const mode of modes) {
      it.effect(`${mode.name}: MCP create_key and create_child_key refuse them the same way`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const { management_token: token } = yield* signIn(app, `nul-mcp-${mode.era}@example.com`, {
            key,
            ip
          })
          // Only a key its owner granted may_delegate has create_child_key.
          const [first] = (yield* app.call("/v1/keys", { key: token, ip })).body.keys
          const granted = yield* post(
            app,
            "/v1/keys/update",
            { key_id: first.key_id, may_delegate: true },
            { key: token, ip }
          )
          assert.strictEqual(granted.status, 200, JSON.stringify(granted.body))
          const managing = yield* connect(`${app.url}/mcp`, { key: token, ip }, mode)
          const created = yield* callTool(managing, "create_key", { label: "ci\u0000" })
          assert.isTrue(created.isError, created.text)
          assert.strictEqual(created.problem.code, "INVALID_INPUT")
          assert.strictEqual(created.problem.param, "label")
          const spending = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
          const child = yield* callTool(spending, "create_child_key", {
            spend_cap_credits: 5,
            label: "a\u0000"
          })
          assert.isTrue(child.isError, child.text)
          assert.strictEqual(child.problem.code, "INVALID_INPUT")
          assert.strictEqual(child.problem.param, "label")
          assert.strictEqual((yield* app.call("/v1/keys", { key: token, ip })).body.keys.length, 1)
        })
      )
    }
  })
})
