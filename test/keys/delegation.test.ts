import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Admin } from "../../src/operator/Admin.ts"
import { Keys } from "../../src/services/Keys.ts"
import { codeIn, latestMail, post, signIn } from "../identity/support.ts"
import { connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

/**
 * The key model as the contract has it: a spend key does data calls; only a key its owner granted
 * `may_delegate` makes child keys; a child never delegates, never claims, never outlives or
 * outreaches its parent; keys do not expire.
 */

const freshIp = ipSequence("10.83")

/** A claimed account on a paid plan, its owner's management token, and its first (minted) key. */
const owned = (email: string, credits = 1000) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const ip = freshIp()
    const minted = yield* app.mint(ip)
    const owner = yield* signIn(app, email, { key: minted.key, ip })
    yield* admin.setPlan(minted.account_id, "flex")
    yield* admin.credit(minted.account_id, credits, "balance", "test purchase")
    return { ...minted, ip, token: owner.management_token as string }
  }).pipe(Effect.orDie)

const echo = (key: string, ip: string, platform = "profnet") =>
  Effect.flatMap(TestApp, (app) =>
    app.call(`/v1/${platform}/test-echo?value=v&cost=1`, { key, ip, idempotencyKey: crypto.randomUUID() })
  )

const toolNames = (url: string, key: string, ip: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* connect(url, { key, ip }, modes[0])
      return (yield* Effect.promise(() => client.listTools())).tools.map((tool) => tool.name)
    })
  )

const childTools = ["create_child_key", "list_child_keys", "revoke_child_key", "update_child_key"]

describe(`delegation and the child key's bounds (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "may_delegate is the owner's grant: default false, shown in GET /v1/keys; without it the child routes are NOT_ENTITLED and the MCP catalogue is data-only",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const account = yield* owned("delegate-owner@example.com")
          const plain = yield* post(
            app,
            "/v1/keys",
            { label: "plain" },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(plain.status, 201, JSON.stringify(plain.body))
          assert.strictEqual(plain.body.may_delegate, false)
          assert.notProperty(plain.body, "expires_at")
          const delegating = yield* post(
            app,
            "/v1/keys",
            { label: "agent", may_delegate: true },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(delegating.status, 201, JSON.stringify(delegating.body))
          assert.strictEqual(delegating.body.may_delegate, true)

          const listed = yield* app.call("/v1/keys", { key: account.token, ip: account.ip })
          const flags = Object.fromEntries(
            listed.body.keys.map((key: { key_id: string; may_delegate: boolean }) => [
              key.key_id,
              key.may_delegate
            ])
          )
          assert.strictEqual(flags[plain.body.key_id], false)
          assert.strictEqual(flags[delegating.body.key_id], true)
          for (const key of listed.body.keys) assert.notProperty(key, "expires_at")

          // Every child route refuses an ordinary key, and the account's minted key too.
          for (const key of [plain.body.key as string, account.key]) {
            for (const [path, body] of [
              ["/v1/keys/child", { spend_cap_credits: 5 }],
              ["/v1/keys/child/revoke", { key_id: "key_nothing" }],
              ["/v1/keys/child/update", { key_id: "key_nothing", spend_cap_credits: 5 }]
            ] as const) {
              const refused = yield* post(app, path, body, { key, ip: account.ip })
              assert.strictEqual(refused.status, 403, `${path}: ${JSON.stringify(refused.body)}`)
              assert.strictEqual(refused.body.code, "NOT_ENTITLED")
            }
            const list = yield* app.call("/v1/keys/children", { key, ip: account.ip })
            assert.strictEqual(list.status, 403, JSON.stringify(list.body))
            assert.strictEqual(list.body.code, "NOT_ENTITLED")
          }

          // The catalogue: data tools (and get_usage) only, unless the key may delegate, and then
          // the child tools on /mcp only.
          const plainTools = yield* toolNames(`${app.url}/mcp`, plain.body.key, account.ip)
          assert.include(plainTools, "get_usage")
          for (const name of childTools) assert.notInclude(plainTools, name)
          const agentTools = yield* toolNames(`${app.url}/mcp`, delegating.body.key, account.ip)
          for (const name of childTools) assert.include(agentTools, name)
          const mountTools = yield* toolNames(`${app.url}/mcp/forum`, delegating.body.key, account.ip)
          assert.include(mountTools, "get_usage")
          for (const name of childTools) assert.notInclude(mountTools, name)

          // The grant taken back: the key makes no more children.
          const child = yield* post(
            app,
            "/v1/keys/child",
            { spend_cap_credits: 5 },
            { key: delegating.body.key, ip: account.ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          assert.notProperty(child.body, "expires_at")
          const withdrawn = yield* post(
            app,
            "/v1/keys/update",
            { key_id: delegating.body.key_id, may_delegate: false },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(withdrawn.status, 200, JSON.stringify(withdrawn.body))
          assert.strictEqual(withdrawn.body.may_delegate, false)
          const after = yield* post(
            app,
            "/v1/keys/child",
            { spend_cap_credits: 5 },
            { key: delegating.body.key, ip: account.ip }
          )
          assert.strictEqual(after.status, 403, JSON.stringify(after.body))
          // A child never delegates.
          const grandchild = yield* post(
            app,
            "/v1/keys/child",
            { spend_cap_credits: 1 },
            { key: child.body.key, ip: account.ip }
          )
          assert.strictEqual(grandchild.status, 403, JSON.stringify(grandchild.body))
          assert.strictEqual(grandchild.body.code, "NOT_ENTITLED")
        })
    )

    it.effect("an unclaimed trial account's key may not delegate, and expires_at is no field of a key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const minted = yield* app.mint(ip)
        const refused = yield* post(app, "/v1/keys/child", { spend_cap_credits: 5 }, { key: minted.key, ip })
        assert.strictEqual(refused.status, 403, JSON.stringify(refused.body))
        assert.strictEqual(refused.body.code, "NOT_ENTITLED")
        const tools = yield* toolNames(`${app.url}/mcp`, minted.key, ip)
        for (const name of childTools) assert.notInclude(tools, name)

        const account = yield* owned("no-expiry@example.com")
        const expiring = yield* post(
          app,
          "/v1/keys",
          { label: "x", expires_at: "2099-01-01T00:00:00Z" },
          { key: account.token, ip: account.ip }
        )
        // Not a field of a key any more: like any field the contract does not name, it changes nothing.
        assert.strictEqual(expiring.status, 201, JSON.stringify(expiring.body))
        assert.notProperty(expiring.body, "expires_at")
        assert.strictEqual((yield* echo(expiring.body.key, account.ip)).status, 200)
      })
    )

    it.effect(
      "a child key is never a claimant: sign-in with it (start and verify) claims nothing and grants nothing",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const keys = yield* Keys
          const sql = yield* SqlClient.SqlClient
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          // A child made on an unclaimed account before delegation was the owner's grant.
          const child = yield* Effect.orDie(
            keys.issue({
              accountId: minted.account_id,
              plan: "trial",
              label: "legacy child",
              limits: { spendCapCredits: 10, capPeriod: "total", platforms: ["forum"] },
              parentKeyId: (yield* Effect.orDie(
                sql<{ id: string }>`SELECT id FROM api_keys WHERE account_id = ${minted.account_id}`
              ))[0]!.id
            })
          )
          const email = "child-claimant@example.com"
          const started = yield* post(app, "/v1/auth/email/start", { email }, { key: child.key, ip })
          assert.strictEqual(started.status, 202, JSON.stringify(started.body))
          const code = codeIn((yield* latestMail(email)).text)
          const verified = yield* post(app, "/v1/auth/email/verify", { email, code }, { key: child.key, ip })
          assert.strictEqual(verified.status, 200, JSON.stringify(verified.body))
          assert.isNull(verified.body.claimed)
          assert.strictEqual(verified.body.grant_credits, 0)
          assert.notInclude(
            verified.body.accounts.map((account: { account_id: string }) => account.account_id),
            minted.account_id
          )
          const [row] = yield* Effect.orDie(
            sql<{
              claimed_at: unknown
              grant_credits: unknown
            }>`SELECT claimed_at, grant_credits FROM accounts WHERE id = ${minted.account_id}`
          )
          assert.isNull(row!.claimed_at)
          assert.strictEqual(Number(row!.grant_credits), 0)

          // The claim page refuses a child key.
          const page = yield* app.call("/claim", {
            method: "POST",
            ip,
            headers: { "content-type": "application/x-www-form-urlencoded", origin: app.url },
            body: new URLSearchParams({ email, key: child.key }).toString()
          })
          assert.strictEqual(page.status, 403, page.text.slice(0, 300))
          assert.include(page.text, "This is a child key: it never claims an account.")
        })
    )

    it.effect(
      "a child is bounded by its parent at every call: the parent's current platforms, its liveness; the parent changes the child's cap and platforms",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const account = yield* owned("bounded-child@example.com")
          const parent = yield* post(
            app,
            "/v1/keys",
            { label: "agent", may_delegate: true, spend_cap_credits: 40 },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const child = yield* post(
            app,
            "/v1/keys/child",
            { spend_cap_credits: 10 },
            { key: parent.body.key, ip: account.ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          assert.strictEqual((yield* echo(child.body.key, account.ip)).status, 200)

          // The parent narrowed to the forum: the child follows at once.
          const narrowed = yield* post(
            app,
            "/v1/keys/update",
            { key_id: parent.body.key_id, platforms: ["forum"] },
            { key: account.token, ip: account.ip }
          )
          assert.strictEqual(narrowed.status, 200, JSON.stringify(narrowed.body))
          const outside = yield* echo(child.body.key, account.ip)
          assert.strictEqual(outside.status, 403, JSON.stringify(outside.body))
          assert.strictEqual(outside.body.code, "NOT_ENTITLED")
          assert.deepStrictEqual(outside.body.entitled, ["forum"])
          assert.strictEqual((yield* echo(child.body.key, account.ip, "forum")).status, 200)

          // The parent changes its child: a cap within its own remainder, platforms within its own.
          const update = (body: object, key = parent.body.key) =>
            post(app, "/v1/keys/child/update", body, { key, ip: account.ip })
          const tooBig = yield* update({ key_id: child.body.key_id, spend_cap_credits: 100 })
          assert.strictEqual(tooBig.status, 400, JSON.stringify(tooBig.body))
          assert.strictEqual(tooBig.body.param, "spend_cap_credits")
          const wider = yield* update({ key_id: child.body.key_id, platforms: ["profnet"] })
          assert.strictEqual(wider.status, 400, JSON.stringify(wider.body))
          assert.strictEqual(wider.body.param, "platforms")
          const noCap = yield* update({ key_id: child.body.key_id, spend_cap_credits: null })
          assert.strictEqual(noCap.status, 400, JSON.stringify(noCap.body))
          assert.strictEqual(noCap.body.param, "spend_cap_credits")
          const unknown = yield* update({ key_id: parent.body.key_id, spend_cap_credits: 3 })
          assert.strictEqual(unknown.status, 404, JSON.stringify(unknown.body))
          const changed = yield* update({
            key_id: child.body.key_id,
            spend_cap_credits: 3,
            platforms: ["forum"]
          })
          assert.strictEqual(changed.status, 200, JSON.stringify(changed.body))
          assert.strictEqual(changed.body.spend_cap_credits, 3)
          assert.deepStrictEqual(changed.body.platforms, ["forum"])
          // One call on each platform so far.
          assert.strictEqual(changed.body.spent_in_period, 2)
          const capped = yield* echo(child.body.key, account.ip, "forum")
          assert.strictEqual(capped.status, 200, JSON.stringify(capped.body))
          const over = yield* echo(child.body.key, account.ip, "forum")
          assert.strictEqual(over.status, 402, JSON.stringify(over.body))
          assert.strictEqual(over.body.limit, "key_cap")

          // A parent found revoked (even with its child left active) leaves the child unusable.
          yield* Effect.orDie(
            sql`UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${parent.body.key_id}`
          )
          const orphan = yield* echo(child.body.key, account.ip, "forum")
          assert.strictEqual(orphan.status, 401, JSON.stringify(orphan.body))
          assert.strictEqual(orphan.body.code, "UNAUTHORIZED")
        })
    )

    it.effect("the MCP tool update_child_key changes a child within its parent", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const app = yield* TestApp
          const account = yield* owned("mcp-child-update@example.com")
          const parent = yield* post(
            app,
            "/v1/keys",
            { label: "agent", may_delegate: true },
            { key: account.token, ip: account.ip }
          )
          const client = yield* connect(`${app.url}/mcp`, { key: parent.body.key, ip: account.ip }, modes[0])
          const made = yield* Effect.promise(() =>
            client.callTool({ name: "create_child_key", arguments: { spend_cap_credits: 7 } })
          )
          assert.notStrictEqual(made.isError, true, JSON.stringify(made))
          const childId = (made.structuredContent as { key_id: string }).key_id
          const changed = yield* Effect.promise(() =>
            client.callTool({
              name: "update_child_key",
              arguments: { key_id: childId, spend_cap_credits: 4, platforms: ["forum"] }
            })
          )
          assert.notStrictEqual(changed.isError, true, JSON.stringify(changed))
          assert.strictEqual(
            (changed.structuredContent as { spend_cap_credits: number }).spend_cap_credits,
            4
          )
          assert.deepStrictEqual((changed.structuredContent as { platforms: Array<string> }).platforms, [
            "forum"
          ])
        })
      )
    )
  })
})
