import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { callTool, connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const freshIp = ipSequence("10.63")

const echo = (app: TestApp["Service"], key: string, ip: string, value: string, cost = 3) =>
  app.call(`/v1/profnet/test-echo?value=${value}&cost=${cost}`, { key, ip, idempotencyKey: `attr-${value}` })

const ids = (receipts: ReadonlyArray<{ readonly key_id: string }>) =>
  [...new Set(receipts.map((r) => r.key_id))].sort()

/**
 * Every receipt names the key that spent (and a child key's parent), so spend splits by sub-agent;
 * a child key sees only its own receipts and its own cap, a parent key or the owner all of them,
 * one key's on asking.
 */
describe(`receipts name their key; a child sees its own (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "key_id and parent_key_id on every receipt; a child's receipts, export and usage are its own",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const owner = yield* signIn(app, "attribution@example.com", { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const token = owner.management_token
          const parent = yield* post(
            app,
            "/v1/keys",
            { label: "orchestrator", spend_cap_credits: 100, cap_period: "month", may_delegate: true },
            { key: token, ip }
          )
          assert.strictEqual(parent.status, 201, JSON.stringify(parent.body))
          const child = yield* post(
            app,
            "/v1/keys/child",
            { label: "sub-agent", spend_cap_credits: 20, cap_period: "total" },
            { key: parent.body.key, ip }
          )
          assert.strictEqual(child.status, 201, JSON.stringify(child.body))
          const ordinaryId = (yield* app.call("/v1/usage", { key: minted.key, ip })).body.key.key_id as string
          const parentId = parent.body.key_id as string
          const childId = child.body.key_id as string

          // The data answer's receipt names its key, and a child's its parent too.
          const byOrdinary = yield* echo(app, minted.key, ip, "ordinary-1")
          assert.strictEqual(byOrdinary.status, 200, byOrdinary.text)
          assert.strictEqual(byOrdinary.body.receipt.key_id, ordinaryId)
          assert.notProperty(byOrdinary.body.receipt, "parent_key_id")
          const byParent = yield* echo(app, parent.body.key, ip, "parent-1")
          assert.strictEqual(byParent.body.receipt.key_id, parentId)
          const byChild = yield* echo(app, child.body.key, ip, "child-1", 4)
          assert.strictEqual(byChild.status, 200, byChild.text)
          assert.strictEqual(byChild.body.receipt.key_id, childId)
          assert.strictEqual(byChild.body.receipt.parent_key_id, parentId)
          // A cache hit's receipt and a replay's name them as well.
          const hit = yield* app.call("/v1/profnet/test-echo?value=child-1&cost=4", {
            key: child.body.key,
            ip,
            idempotencyKey: "attr-child-hit"
          })
          assert.strictEqual(hit.status, 200, hit.text)
          assert.strictEqual(hit.body.receipt.parent_key_id, parentId)
          const replay = yield* echo(app, child.body.key, ip, "child-1", 4)
          assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
          assert.strictEqual(replay.body.receipt.key_id, childId)
          assert.strictEqual(replay.body.receipt.parent_key_id, parentId)

          // The owner sees every key's receipts, and one key's on asking.
          const all = yield* app.call("/v1/receipts?limit=100", { key: parent.body.key, ip })
          assert.strictEqual(all.status, 200, all.text)
          assert.deepStrictEqual(ids(all.body.receipts), [childId, ordinaryId, parentId].sort())
          const childs = all.body.receipts.filter((r: { key_id: string }) => r.key_id === childId)
          for (const receipt of childs) assert.strictEqual(receipt.parent_key_id, parentId)
          const onlyChild = yield* app.call(`/v1/receipts?key_id=${childId}`, { key: parent.body.key, ip })
          assert.deepStrictEqual(ids(onlyChild.body.receipts), [childId])
          assert.strictEqual(onlyChild.body.receipts.length, 2)

          // A child sees its own receipts only: the list, one by id, the export.
          const own = yield* app.call("/v1/receipts", { key: child.body.key, ip })
          assert.deepStrictEqual(ids(own.body.receipts), [childId])
          const others = yield* app.call(`/v1/receipts?key_id=${parentId}`, { key: child.body.key, ip })
          assert.deepStrictEqual(others.body.receipts, [])
          const parentsReceipt = yield* app.call(`/v1/receipts/${byParent.body.receipt.id}`, {
            key: child.body.key,
            ip
          })
          assert.strictEqual(parentsReceipt.status, 404)
          assert.strictEqual(parentsReceipt.body.code, "NOT_FOUND")
          const ownReceipt = yield* app.call(`/v1/receipts/${byChild.body.receipt.id}`, {
            key: child.body.key,
            ip
          })
          assert.strictEqual(ownReceipt.status, 200)
          assert.strictEqual(ownReceipt.body.parent_key_id, parentId)
          const day = byChild.body.receipt.created_at.slice(0, 10)
          const exported = yield* app.call(`/v1/receipts/export?from=${day}&to=${day}&format=jsonl`, {
            key: child.body.key,
            ip
          })
          assert.strictEqual(exported.status, 200, exported.text)
          const lines = exported.text
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line))
          assert.deepStrictEqual(ids(lines), [childId])
          const csv = yield* app.call(`/v1/receipts/export?from=${day}&to=${day}&format=csv`, {
            key: token,
            ip
          })
          const [header, ...rows] = csv.text.trim().split("\r\n")
          const columns = header!.split(",")
          assert.includeMembers(columns, ["key_id", "parent_key_id"])
          const keyColumn = columns.indexOf("key_id")
          const parentColumn = columns.indexOf("parent_key_id")
          assert.deepStrictEqual(
            [...new Set(rows.map((row) => row.split(",")[keyColumn]))].sort(),
            ids(all.body.receipts)
          )
          for (const row of rows) {
            const cells = row.split(",")
            assert.strictEqual(cells[parentColumn], cells[keyColumn] === childId ? parentId : "")
          }
          const tokenChild = yield* app.call(
            `/v1/receipts/export?from=${day}&to=${day}&format=jsonl&key_id=${childId}`,
            { key: token, ip }
          )
          assert.deepStrictEqual(
            ids(
              tokenChild.text
                .trim()
                .split("\n")
                .map((line) => JSON.parse(line))
            ),
            [childId]
          )

          // The contract documents the filter on both routes.
          const openapi = (yield* app.call("/v1/openapi.json")).body
          for (const path of ["/v1/receipts", "/v1/receipts/export"]) {
            const names = (openapi.paths[path].get.parameters as Array<{ name: string; in: string }>)
              .filter((parameter) => parameter.in === "query")
              .map((parameter) => parameter.name)
            assert.include(names, "key_id", path)
          }
          const receiptSchema = JSON.stringify(openapi.components.schemas.Receipt)
          assert.include(receiptSchema, "parent_key_id")
          assert.include(openapi.components.schemas.Receipt.required, "key_id")

          // A child's usage: its own cap, period, spend and remainder, beside what the account can fund.
          const usage = yield* app.call("/v1/usage", { key: child.body.key, ip })
          assert.strictEqual(usage.status, 200, usage.text)
          assert.strictEqual(usage.body.key.key_id, childId)
          assert.strictEqual(usage.body.key.parent_key_id, parentId)
          assert.deepStrictEqual(usage.body.key.spend_cap, {
            credits: 20,
            period: "total",
            spent_in_period: 8,
            remaining: 12
          })
          assert.strictEqual(usage.body.key_cap_remaining, 12)
          assert.strictEqual(usage.body.credits_remaining, 10_000 - 3 - 3 - 8)
          // MCP's get_usage says the same for the child.
          const client = yield* connect(`${app.url}/mcp`, { key: child.body.key, ip }, modes[0])
          const tool = yield* callTool(client, "get_usage", {})
          assert.isFalse(tool.isError, tool.text)
          assert.deepStrictEqual(tool.structured.key, usage.body.key)
          assert.strictEqual(tool.structured.key_cap_remaining, 12)
          const parentUsage = yield* app.call("/v1/usage", { key: parent.body.key, ip })
          assert.strictEqual(parentUsage.body.key.spend_cap.spent_in_period, 3 + 8)
          assert.isString(parentUsage.body.key.spend_cap.resets_at)
          const ordinaryUsage = yield* app.call("/v1/usage", { key: minted.key, ip })
          assert.notProperty(ordinaryUsage.body.key, "spend_cap")
          assert.notProperty(ordinaryUsage.body, "key_cap_remaining")
        })
    )
  })
})
