import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { dayOf, dayToIso } from "../../src/domain/time.ts"
import { buy } from "../billing/support.ts"
import { signIn, spend } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { startReceiver, verified } from "../support/webhookReceiver.ts"
import { freshHome, svc } from "./run.ts"

const receiver = await startReceiver()
afterAll(() => receiver.close())

const until = (predicate: () => boolean, what: string) =>
  Effect.promise(async () => {
    for (let n = 0; n < 400; n++) {
      if (predicate()) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`timed out waiting for ${what}`)
  })

describe("svc webhooks, svc topup and svc receipts export", () => {
  layer(testApp(testOperations, { webhookAllowPrivateUrls: true }), {
    timeout: 180_000,
    excludeTestServices: true
  })((it) => {
    it.effect(
      "manage webhooks and automatic top-up, and export receipts, from a shell",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.95.0.1"
          const minted = yield* app.mint(ip)
          const person = yield* signIn(app, "svc-hooks@example.com", { key: minted.key, ip })
          yield* buy(app, "flex", { key: minted.key, ip })
          const home = freshHome()
          mkdirSync(join(home, "svc"), { recursive: true })
          writeFileSync(
            join(home, "svc", "config.json"),
            JSON.stringify({ key: minted.key, management_token: person.management_token }),
            { mode: 0o600 }
          )
          const env = { baseUrl: app.url, home, extra: { SVC_NO_BROWSER: "1" } }

          const refused = yield* svc(["webhooks", "create", receiver.url("/cli"), "--event", "key.nope"], env)
          assert.strictEqual(refused.code, 2, refused.stderr)
          assert.include(refused.stderr, "INVALID_INPUT")

          const created = yield* svc(
            [
              "webhooks",
              "create",
              receiver.url("/cli"),
              "--event",
              "key.created",
              "--event",
              "topup.succeeded",
              "--json"
            ],
            env
          )
          assert.strictEqual(created.code, 0, created.stderr)
          const hook = JSON.parse(created.stdout)
          assert.match(hook.secret, /^whsec_/)
          const listed = yield* svc(["webhooks", "list"], env)
          assert.strictEqual(listed.code, 0, listed.stderr)
          assert.include(listed.stdout, hook.webhook_id)
          assert.notInclude(listed.stdout, hook.secret)

          const key = yield* svc(["keys", "create", "--label", "from-cli", "--json"], env)
          assert.strictEqual(key.code, 0, key.stderr)
          yield* until(() => receiver.received.some((r) => r.path === "/cli"), "key.created")
          assert.strictEqual(
            verified(hook.secret, receiver.received.find((r) => r.path === "/cli")!).type,
            "key.created"
          )
          const tested = yield* svc(["webhooks", "test", hook.webhook_id], env)
          assert.strictEqual(tested.code, 0, tested.stderr)
          assert.include(tested.stdout, "A ping")
          yield* until(() => receiver.received.filter((r) => r.path === "/cli").length >= 2, "the ping")
          yield* Effect.sleep("300 millis")
          const deliveries = yield* svc(["webhooks", "deliveries", hook.webhook_id, "--json"], env)
          assert.strictEqual(deliveries.code, 0, deliveries.stderr)
          const found = JSON.parse(deliveries.stdout)
          assert.includeMembers(
            found.attempts.map((attempt: any) => attempt.type),
            ["key.created", "ping"]
          )
          const human = yield* svc(["webhooks", "deliveries", hook.webhook_id], env)
          assert.include(human.stdout, "succeeded")

          const on = yield* svc(["topup", "on", "--below", "19995", "--monthly-max-usd", "40", "--json"], env)
          assert.strictEqual(on.code, 0, on.stderr)
          assert.deepInclude(JSON.parse(on.stdout), {
            enabled: true,
            below_credits: 19_995,
            monthly_max_usd_cents: 4_000
          })
          assert.strictEqual((yield* spend(app, minted.key, ip, 10)).status, 200)
          yield* until(
            () =>
              receiver.received.some(
                (r) => r.path === "/cli" && verified(hook.secret, r).type === "topup.succeeded"
              ),
            "the top-up"
          )
          const shown = yield* svc(["topup", "show"], env)
          assert.strictEqual(shown.code, 0, shown.stderr)
          assert.match(shown.stdout, /month_spent_usd_cents\s+2000/)
          const off = yield* svc(["topup", "off"], env)
          assert.include(off.stdout, "off")

          const today = dayToIso(dayOf(Date.now()))
          const jsonl = yield* svc(
            ["receipts", "export", "--from", today, "--to", today, "--format", "jsonl"],
            env
          )
          assert.strictEqual(jsonl.code, 0, jsonl.stderr)
          const receipts = jsonl.stdout
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line))
          assert.strictEqual(receipts.length, 1)
          assert.strictEqual(receipts[0].operation, "testEcho")
          const csv = yield* svc(["receipts", "export", "--from", today, "--to", today], env)
          assert.isTrue(csv.stdout.startsWith("receipt_id,created_at,operation"))
          const tooLong = yield* svc(["receipts", "export", "--from", "2020-01-01", "--to", today], env)
          assert.strictEqual(tooLong.code, 2, tooLong.stderr)
          // The receipts list itself still answers.
          const list = yield* svc(["receipts"], env)
          assert.strictEqual(list.code, 0, list.stderr)
          assert.match(list.stdout, /rcpt_/)

          const deleted = yield* svc(["webhooks", "delete", hook.webhook_id], env)
          assert.strictEqual(deleted.code, 0, deleted.stderr)
          const again = yield* svc(["webhooks", "delete", hook.webhook_id], env)
          assert.strictEqual(again.code, 1, again.stderr)
          assert.include(again.stderr, "NOT_FOUND")
        }),
      { timeout: 170_000 }
    )
  })
})
