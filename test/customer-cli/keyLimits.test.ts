import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { Admin } from "../../src/operator/Admin.ts"
import { post, signIn } from "../identity/support.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { TestApp, testApp } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"
import { freshHome, svc } from "./run.ts"

const nextYear = new Date().getUTCFullYear() + 1

describe("svc keys: caps, platforms, delegation and child keys from a shell", () => {
  layer(testApp(testOperations), { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect(
      "create, update and list capped keys; make, list and revoke child keys; bad flags exit 2",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = "10.96.0.1"
          const minted = yield* app.mint(ip)
          const person = yield* signIn(app, "svc-caps@example.com", { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          const home = freshHome()
          mkdirSync(join(home, "svc"), { recursive: true })
          writeFileSync(
            join(home, "svc", "config.json"),
            JSON.stringify({ key: minted.key, management_token: person.management_token }),
            { mode: 0o600 }
          )
          const env = { baseUrl: app.url, home }

          // Bad flags: exit 2, a message naming the flag, nothing created.
          for (const [flags, says] of [
            [["--cap", "0"], "--cap takes a whole number"],
            [["--cap", "12.5"], "--cap takes a whole number"],
            [["--period", "week"], "--period is one of day, month, total"],
            [["--platforms", "forum,nowhere"], "unknown: nowhere"],
            // A spend key does not expire: there is no such flag.
            [["--expires", `${nextYear}-12-31`], "--expires"]
          ] as const) {
            const refused = yield* svc(["keys", "create", ...flags], env)
            assert.strictEqual(refused.code, 2, `${flags.join(" ")}: ${refused.stderr}`)
            assert.include(refused.stderr, says)
          }
          const created = yield* svc(
            [
              "keys",
              "create",
              "--label",
              "capped",
              "--cap",
              "500",
              "--period",
              "day",
              "--platforms",
              "forum",
              "--may-delegate",
              "--json"
            ],
            env
          )
          assert.strictEqual(created.code, 0, created.stderr)
          const capped = JSON.parse(created.stdout)
          assert.strictEqual(capped.spend_cap_credits, 500)
          assert.strictEqual(capped.cap_period, "day")
          assert.deepStrictEqual(capped.platforms, ["forum"])
          assert.strictEqual(capped.may_delegate, true)
          assert.notProperty(capped, "expires_at")

          // The key spends 7 credits on forum; profnet is outside its platforms.
          const spent = yield* app.call("/v1/forum/test-echo?value=v&cost=7", {
            key: capped.key,
            ip,
            idempotencyKey: "cli-cap-0001"
          })
          assert.strictEqual(spent.status, 200, JSON.stringify(spent.body))
          const outside = yield* app.call("/v1/profnet/test-echo?value=v&cost=1", {
            key: capped.key,
            ip,
            idempotencyKey: "cli-cap-0002"
          })
          assert.strictEqual(outside.body.code, "NOT_ENTITLED")

          // A child key, made with the capped key as the CLI's key (SVC_KEY).
          const asParent = { ...env, extra: { SVC_KEY: capped.key } }
          const noCap = yield* svc(["keys", "child", "create", "--label", "sub"], asParent)
          assert.strictEqual(noCap.code, 2, noCap.stderr)
          assert.include(noCap.stderr, "needs --cap")
          const tooBig = yield* svc(["keys", "child", "create", "--cap", "600"], asParent)
          assert.strictEqual(tooBig.code, 2, tooBig.stderr)
          assert.include(tooBig.stderr, "493")
          const child = yield* svc(
            ["keys", "child", "create", "--label", "sub-agent", "--cap", "40", "--json"],
            asParent
          )
          assert.strictEqual(child.code, 0, child.stderr)
          const made = JSON.parse(child.stdout)
          assert.strictEqual(made.parent_key_id, capped.key_id)
          assert.deepStrictEqual(made.platforms, ["forum"], "a child gets its parent's platforms")
          const children = yield* svc(["keys", "child", "list", "--json"], asParent)
          assert.strictEqual(children.code, 0, children.stderr)
          assert.deepStrictEqual(
            JSON.parse(children.stdout).keys.map((k: { key_id: string }) => k.key_id),
            [made.key_id]
          )

          // The parent changes its child: a cap within its own, platforms among its own.
          const keepsCap = yield* svc(["keys", "child", "update", made.key_id, "--cap", "none"], asParent)
          assert.strictEqual(keepsCap.code, 2, keepsCap.stderr)
          const childChanged = yield* svc(
            ["keys", "child", "update", made.key_id, "--cap", "30", "--platforms", "forum", "--json"],
            asParent
          )
          assert.strictEqual(childChanged.code, 0, childChanged.stderr)
          assert.strictEqual(JSON.parse(childChanged.stdout).spend_cap_credits, 30)
          const childWider = yield* svc(
            ["keys", "child", "update", made.key_id, "--platforms", "profnet"],
            asParent
          )
          assert.strictEqual(childWider.code, 2, childWider.stderr)
          assert.include(childWider.stderr, "may not call profnet")

          // The list: the cap, what it spent, when it resets, platforms, delegation; the child under its parent.
          const listed = yield* svc(["keys", "list"], env)
          assert.strictEqual(listed.code, 0, listed.stderr)
          const lines = listed.stdout.split("\n")
          const parentLine = lines.findIndex((line) => line.startsWith(capped.key_id))
          assert.isAtLeast(parentLine, 0, listed.stdout)
          assert.match(
            lines[parentLine + 1]!,
            /7\/500 credits today \(resets \d{4}-\d\d-\d\d 00:00Z\) · forum · may delegate$/
          )
          assert.include(lines[parentLine + 2]!, `└ child ${made.key_id}`)
          assert.match(lines[parentLine + 3]!, /0\/30 credits in total · forum$/)
          assert.include(listed.stdout, minted.key.slice(0, 4), "the account's first key is listed too")

          // Update: an absent flag stays; none / all clear.
          const nothing = yield* svc(["keys", "update", capped.key_id], env)
          assert.strictEqual(nothing.code, 2, nothing.stderr)
          assert.include(nothing.stderr, "Nothing to change")
          const raised = yield* svc(
            ["keys", "update", capped.key_id, "--cap", "800", "--period", "month", "--json"],
            env
          )
          assert.strictEqual(raised.code, 0, raised.stderr)
          const afterRaise = JSON.parse(raised.stdout)
          assert.strictEqual(afterRaise.spend_cap_credits, 800)
          assert.strictEqual(afterRaise.cap_period, "month")
          assert.deepStrictEqual(afterRaise.platforms, ["forum"])
          assert.strictEqual(afterRaise.spent_in_period, 7)
          const cleared = yield* svc(
            ["keys", "update", capped.key_id, "--cap", "none", "--platforms", "all"],
            env
          )
          assert.strictEqual(cleared.code, 0, cleared.stderr)
          assert.include(cleared.stdout, "no cap · all platforms · may delegate")
          const badUpdate = yield* svc(["keys", "update", capped.key_id, "--platforms", ""], env)
          assert.strictEqual(badUpdate.code, 2, badUpdate.stderr)
          const unknownKey = yield* svc(["keys", "update", "key_nosuchkey", "--cap", "5"], env)
          assert.notStrictEqual(unknownKey.code, 0)
          assert.include(unknownKey.stderr, "NOT_FOUND")

          const revoked = yield* svc(["keys", "child", "revoke", made.key_id], asParent)
          assert.strictEqual(revoked.code, 0, revoked.stderr)
          assert.include(revoked.stdout, `Revoked child key ${made.key_id}`)
          const gone = yield* app.call("/v1/forum/test-echo?value=v&cost=1", {
            key: made.key,
            ip,
            idempotencyKey: "cli-cap-0003"
          })
          assert.strictEqual(gone.status, 401)

          // The grant taken back: the key makes no more child keys.
          const withdrawn = yield* svc(["keys", "update", capped.key_id, "--no-may-delegate"], env)
          assert.strictEqual(withdrawn.code, 0, withdrawn.stderr)
          assert.notInclude(withdrawn.stdout, "may delegate")
          const notAnyMore = yield* svc(["keys", "child", "create", "--cap", "5"], asParent)
          assert.notStrictEqual(notAnyMore.code, 0)
          assert.include(notAnyMore.stderr, "NOT_ENTITLED")

          // Without a spend key, child keys say how to get one (exit 4).
          const homeless = freshHome()
          mkdirSync(join(homeless, "svc"), { recursive: true })
          writeFileSync(
            join(homeless, "svc", "config.json"),
            JSON.stringify({ management_token: person.management_token }),
            { mode: 0o600 }
          )
          const keyless = yield* svc(["keys", "child", "list"], { baseUrl: app.url, home: homeless })
          assert.strictEqual(keyless.code, 4, keyless.stderr)
          assert.include(keyless.stderr, "SVC_KEY")
        }),
      // Each step starts a CLI process (about a second each on a shared machine).
      180_000
    )
  })
})

describe("svc data commands with a capped key", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "the cost line says what the key's cap has left; past it, exit 3 saying to raise the cap, not to buy",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const admin = yield* Admin
          const ip = "10.96.1.1"
          const minted = yield* app.mint(ip)
          const person = yield* signIn(app, "svc-caps-data@example.com", { key: minted.key, ip })
          yield* Effect.orDie(admin.setPlan(minted.account_id, "flex"))
          yield* Effect.orDie(admin.credit(minted.account_id, 1_000, "balance", "test purchase"))
          const capped = yield* post(
            app,
            "/v1/keys",
            { spend_cap_credits: 10, cap_period: "day" },
            { key: person.management_token, ip }
          )
          assert.strictEqual(capped.status, 201, JSON.stringify(capped.body))
          const env = { baseUrl: app.url, home: freshHome(), extra: { SVC_KEY: capped.body.key } }
          const slug = sampleArguments.getProfile!.identifier as string

          const first = yield* svc(["profnet", "profile", slug, "--sections", "about"], env)
          assert.strictEqual(first.code, 0, first.stderr)
          assert.match(
            first.stderr,
            /cost 4 credits \(quoted 4\) · receipt rcpt_\w+ .*· \d+ credits left · key cap 6 left/
          )
          const json = yield* svc(["profnet", "profile", slug, "--sections", "about", "--json"], env)
          assert.strictEqual(json.code, 0, json.stderr)
          assert.notProperty(
            JSON.parse(json.stdout),
            "usage",
            "--json prints the envelope as the service sent it"
          )
          assert.include(json.stderr, "key cap 2 left")

          const refused = yield* svc(["profnet", "profile", slug, "--sections", "about"], env)
          assert.strictEqual(refused.code, 3, refused.stderr)
          assert.include(refused.stderr, "INSUFFICIENT_CREDITS")
          assert.include(refused.stderr, "The key's spend cap has 2 credits left until it starts afresh at ")
          assert.include(refused.stderr, "svc keys update <key_id> --cap N")
          assert.notInclude(refused.stderr, "Buy credits")
          const refusedJson = yield* svc(["profnet", "profile", slug, "--sections", "about", "--json"], env)
          assert.strictEqual(refusedJson.code, 3, refusedJson.stderr)
          const problem = JSON.parse(refusedJson.stderr)
          assert.strictEqual(problem.code, "INSUFFICIENT_CREDITS")
          assert.strictEqual(problem.limit, "key_cap")
          assert.strictEqual(problem.credits_available, 2)
        }),
      // Each step starts a CLI process (about a second each on a shared machine).
      180_000
    )
  })
})
