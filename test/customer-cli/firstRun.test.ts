import { readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { ManagementTokens } from "../../src/services/ManagementTokens.ts"
import { SignIn } from "../../src/services/SignIn.ts"
import { signIn } from "../identity/support.ts"
import { freePort } from "../oauth/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { freshHome, start, svc, waitFor } from "./run.ts"

const configOf = (home: string) => JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8"))

/** `svc login --device` approved for `email` through the service, as a person would at /activate. */
const deviceLogin = (env: { baseUrl: string; home: string }, email: string, ip: string) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const signIns = yield* SignIn
    const managementTokens = yield* ManagementTokens
    const login = start(["login", "--device"], env)
    const [, code] = yield* waitFor(login.stderr, /enter (\S+-\S+)/)
    const person = yield* signIn(app, email, { ip })
    const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
    yield* Effect.orDie(signIns.decideDevice(governor, code!, true))
    const finished = yield* Effect.promise(() => login.done)
    assert.strictEqual(finished.code, 0, finished.stderr)
    return finished
  })

describe("svc's first run", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("--help lists the environment variables, the config file, --base-url and the exit codes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const help = yield* svc(["--help"], { baseUrl: app.url, home: freshHome() })
        assert.strictEqual(help.code, 0, help.stderr)
        for (const text of [
          "SVC_BASE_URL",
          "SVC_KEY",
          "SVC_ADMIN_TOKEN",
          "SVC_X402_PRIVATE_KEY",
          "--base-url",
          "svc/config.json",
          "Exit codes",
          "2 usage error",
          "3 payment needed",
          "4 no key or sign-in"
        ])
          assert.include(help.stdout, text)
      })
    )

    it.effect(
      "an unreachable service is said so, with how to point the CLI elsewhere; --base-url does",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const closed = `http://127.0.0.1:${yield* Effect.promise(freePort)}`
          const home = freshHome()
          const refused = yield* svc(["init"], { baseUrl: closed, home })
          assert.strictEqual(refused.code, 1)
          assert.include(refused.stderr, `Cannot reach the service at ${closed}`)
          assert.include(refused.stderr, "SVC_BASE_URL=")
          assert.include(refused.stderr, "--base-url")
          assert.notInclude(refused.stderr, "Transport error")
          const asJson = yield* svc(["usage", "--json"], {
            baseUrl: closed,
            home,
            extra: { SVC_KEY: "svc_x" }
          })
          assert.include(JSON.parse(asJson.stderr).message, "Cannot reach the service")
          // The flag wins over the environment, before or after the command.
          const flagged = yield* svc(["init", "--base-url", app.url], { baseUrl: closed, home })
          assert.strictEqual(flagged.code, 0, flagged.stderr)
          assert.strictEqual(configOf(home).base_url, app.url)
          const usage = yield* svc(["--base-url", app.url, "usage", "--json"], { baseUrl: closed, home })
          assert.strictEqual(usage.code, 0, usage.stderr)
        }),
      90_000
    )

    it.effect(
      "another person's sign-in after init: whoami shows the key's account alone, and says why",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const env = { baseUrl: app.url, home: freshHome() }
          yield* svc(["init"], env)
          const mine = configOf(env.home).account_id as string
          // Another person's sign-in: the key's account is not theirs.
          const other = yield* deviceLogin(env, "someone-else@example.com", "10.73.0.1")
          assert.include(other.stderr, `This CLI's key is of ${mine}`)
          assert.include(other.stderr, `/claim?account=${mine}`)
          const who = JSON.parse((yield* svc(["whoami", "--json"], env)).stdout)
          assert.strictEqual(who.account_id, mine)
          assert.isNull(who.email, "no email beside an account it does not govern")
          assert.include(who.note, "does not govern")
          const keys = yield* svc(["keys", "list", "--json"], env)
          assert.notStrictEqual(
            keys.code,
            0,
            "keys act on the key's account, which this sign-in does not govern"
          )
        }),
      90_000
    )

    it.effect(
      "the owner's sign-in after init: whoami, usage, keys and alert name the same account",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          // The owner's sign-in (a claim of the key's account): one account everywhere.
          const home = freshHome()
          const owned = { baseUrl: app.url, home }
          yield* svc(["init"], owned)
          const key = configOf(home).key as string
          const account = configOf(home).account_id as string
          yield* signIn(app, "owner-cli@example.com", { key, ip: "10.73.0.2" })
          const login = yield* deviceLogin(owned, "owner-cli@example.com", "10.73.0.3")
          assert.notInclude(login.stderr, "does not govern")
          const whoami = JSON.parse((yield* svc(["whoami", "--json"], owned)).stdout)
          const usage = JSON.parse((yield* svc(["usage", "--json"], owned)).stdout)
          const listed = JSON.parse((yield* svc(["keys", "list", "--json"], owned)).stdout)
          assert.deepStrictEqual(
            [whoami.account_id, usage.account_id, listed.account_id],
            [account, account, account]
          )
          assert.strictEqual(whoami.email, "owner-cli@example.com")
          const alert = yield* svc(["alert", "100"], owned)
          assert.strictEqual(alert.code, 0, alert.stderr)
          // A key made with --use moves the CLI's account with it.
          const created = JSON.parse((yield* svc(["keys", "create", "--use", "--json"], owned)).stdout)
          assert.strictEqual(configOf(home).key, created.key)
          assert.strictEqual(configOf(home).account_id, account)
        }),
      90_000
    )

    it.effect(
      "usage prints free_tier whole; mcp-config lists its choices; --limit is a number",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const env = { baseUrl: app.url, home: freshHome() }
          yield* svc(["init"], env)
          const usage = yield* svc(["usage"], env)
          assert.strictEqual(usage.code, 0, usage.stderr)
          assert.include(usage.stdout, "free_tier")
          for (const field of ["credits_per_ip_day", "used_today", "remaining_today"])
            assert.match(usage.stdout, new RegExp(`\\n\\s+${field}\\s+\\d+`))
          assert.notInclude(usage.stdout, "…")

          const choices = yield* svc(["mcp-config"], env)
          assert.strictEqual(choices.code, 2, choices.stderr)
          for (const name of ["claude", "cursor", "vscode"]) assert.include(choices.stderr, name)

          const notANumber = yield* svc(["profnet", "search-people", "engineer", "--limit", "ten"], env)
          assert.strictEqual(notANumber.code, 2, notANumber.stderr)
          const help = yield* svc(["profnet", "search-people", "--help"], env)
          assert.match(help.stdout, /--limit integer/)
          assert.include(help.stdout, "--max-credits")
          // A resolve takes its url only (the contract's resolveUrl): no ceiling, no realtime.
          const resolveHelp = yield* svc(["profnet", "resolve-url", "--help"], env)
          assert.strictEqual(resolveHelp.code, 0, resolveHelp.stderr)
          assert.notInclude(resolveHelp.stdout, "--max-credits")
          assert.notInclude(resolveHelp.stdout, "--realtime")
          const five = yield* svc(["profnet", "search-people", "engineer", "--limit", "5", "--json"], env)
          assert.strictEqual(five.code, 0, five.stderr)
        }),
      90_000
    )

    it.effect("admin outbox prints its times as ISO 8601", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        yield* signIn(app, "outbox-cli@example.com", { ip: "10.73.0.9" })
        const env = {
          baseUrl: app.url,
          home: freshHome(),
          extra: { SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c" }
        }
        const outbox = yield* svc(["admin", "outbox", "--email", "outbox-cli@example.com"], env)
        assert.strictEqual(outbox.code, 0, outbox.stderr)
        const [message] = JSON.parse(outbox.stdout)
        assert.match(message.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.match(message.next_attempt_at, /^\d{4}-\d{2}-\d{2}T/)
      })
    )
  })
})
