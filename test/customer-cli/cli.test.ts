import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { delimiter, join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { ManagementTokens } from "../../src/services/ManagementTokens.ts"
import { SignIn } from "../../src/services/SignIn.ts"
import { pay } from "../billing/support.ts"
import { signIn } from "../identity/support.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { TestApp, testApp } from "../support/app.ts"
import { freshHome, start, svc, svcBin, waitFor } from "./run.ts"

const configOf = (home: string) => JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8"))
const slug = sampleArguments.getProfile!.identifier as string

describe("the svc command line, piped", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("init saves a trial key (0600); a data call prints data on stdout and cost on stderr", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const env = { baseUrl: app.url, home: freshHome() }
        const init = yield* svc(["init"], env)
        assert.strictEqual(init.code, 0, init.stderr)
        const config = configOf(env.home)
        assert.match(config.key, /^svc_/)
        assert.strictEqual(statSync(join(env.home, "svc", "config.json")).mode & 0o777, 0o600)

        const human = yield* svc(["profnet", "profile", slug, "--sections", "about"], env)
        assert.strictEqual(human.code, 0, human.stderr)
        assert.include(human.stdout, slug)
        assert.notInclude(human.stdout, "\u001b[", "no colour when piped")
        assert.match(human.stderr, /cost 4 credits \(quoted 4\) · receipt rcpt_/)

        const json = yield* svc(["profnet", "getProfile", "--identifier", slug, "--json"], env)
        assert.strictEqual(json.code, 0, json.stderr)
        const envelope = JSON.parse(json.stdout)
        assert.strictEqual(envelope.kind, "person")

        const usage = yield* svc(["usage", "--json"], env)
        assert.strictEqual(JSON.parse(usage.stdout).today.credits, 8)
        const receipts = yield* svc(["receipts"], env)
        assert.strictEqual(receipts.code, 0, receipts.stderr)
        assert.match(receipts.stdout, /rcpt_/)

        const mcp = yield* svc(["mcp-config", "claude"], env)
        assert.strictEqual(
          JSON.parse(mcp.stdout).mcpServers["svc-data"].headers.Authorization,
          `Bearer ${config.key}`
        )
      })
    )

    it.effect("exits 2 on a usage error, 3 when payment is needed, 4 without a key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const env = { baseUrl: app.url, home: freshHome() }
        const keyless = yield* svc(["usage"], env)
        assert.strictEqual(keyless.code, 4, keyless.stderr)
        assert.include(keyless.stderr, "svc init")
        const unknown = yield* svc(["profnet", "profile", slug, "--no-such-flag"], env)
        assert.strictEqual(unknown.code, 2, unknown.stderr)
        yield* svc(["init"], env)
        const badValue = yield* svc(["profnet", "profile", slug, "--sections", "nonsense"], env)
        assert.strictEqual(badValue.code, 2, badValue.stderr)
        const trialCap = yield* svc(["profnet", "profile", slug, "--realtime"], env)
        assert.strictEqual(trialCap.code, 3, trialCap.stderr)
        assert.include(trialCap.stderr, "TRIAL_CAP_EXCEEDED")
        const asJson = yield* svc(["profnet", "profile", slug, "--realtime", "--json"], env)
        assert.strictEqual(asJson.code, 3)
        const problem = JSON.parse(asJson.stderr)
        assert.strictEqual(problem.code, "TRIAL_CAP_EXCEEDED")
        assert.strictEqual(problem.offer.resume.action, "retry_fresh_idempotency_key")
      })
    )

    it.effect("buys a pack on the local rail: prints the checkout URL, waits, exits 0 once paid", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const env = { baseUrl: app.url, home: freshHome(), extra: { SVC_POLL_MS: "100" } }
        yield* svc(["init"], env)
        const buying = start(["buy", "flex"], env)
        const [url] = yield* waitFor(buying.stdout, /http\S+\/checkout\/cs_\S+/)
        const paid = yield* pay(app, url)
        assert.strictEqual(paid.status, 303)
        const finished = yield* Effect.promise(() => buying.done)
        assert.strictEqual(finished.code, 0, finished.stderr)
        assert.include(finished.stderr, "Paid")
        const usage = yield* svc(["usage", "--json"], env)
        assert.strictEqual(JSON.parse(usage.stdout).plan, "flex")
      })
    )

    it.effect(
      "signs in by the device flow, approved through the service; then manages keys; logs out",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const signIns = yield* SignIn
          const managementTokens = yield* ManagementTokens
          const env = { baseUrl: app.url, home: freshHome() }
          const login = start(["login", "--device"], env)
          const [, code] = yield* waitFor(login.stderr, /enter (\S+-\S+)/)
          const person = yield* signIn(app, "svc-cli@example.com", { ip: "10.72.0.1" })
          const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
          yield* Effect.orDie(signIns.decideDevice(governor, code!, true))
          const finished = yield* Effect.promise(() => login.done)
          assert.strictEqual(finished.code, 0, finished.stderr)
          assert.include(finished.stdout, "Signed in as svc-cli@example.com")
          assert.match(configOf(env.home).management_token, /^svcm_/)

          const created = yield* svc(["keys", "create", "--label", "cli", "--use", "--json"], env)
          assert.strictEqual(created.code, 0, created.stderr)
          const key = JSON.parse(created.stdout || `{"stderr": ${JSON.stringify(created.stderr)}}`)
          assert.isString(key.key, created.stderr)
          assert.strictEqual(configOf(env.home).key, key.key)
          const listed = yield* svc(["keys", "list"], env)
          assert.include(listed.stdout, key.key_id)
          const rotated = yield* svc(["keys", "rotate", key.key_id, "--json"], env)
          assert.strictEqual(JSON.parse(rotated.stdout).replaces, key.key_id)
          const alert = yield* svc(["alert", "100"], env)
          assert.strictEqual(alert.code, 0, alert.stderr)
          const portal = yield* svc(["portal"], env)
          assert.strictEqual(portal.code, 0, portal.stderr)
          assert.match(portal.stdout, /\/portal/)
          const who = yield* svc(["whoami", "--json"], env)
          assert.strictEqual(JSON.parse(who.stdout).email, "svc-cli@example.com")
          const revoked = yield* svc(["keys", "revoke", key.key_id], env)
          assert.strictEqual(revoked.code, 0, revoked.stderr)
          const out = yield* svc(["logout"], env)
          assert.strictEqual(out.code, 0, out.stderr)
          assert.isUndefined(configOf(env.home).management_token)
          const after = yield* svc(["keys", "list"], env)
          assert.strictEqual(after.code, 4, after.stderr)
        }),
      90_000
    )

    it.effect("svc admin is the operator CLI, with the admin token", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { account_id } = yield* app.mint("10.72.0.3")
        const env = {
          baseUrl: app.url,
          home: freshHome(),
          extra: { SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c" }
        }
        const shown = yield* svc(["admin", "account", "--account", account_id], env)
        assert.strictEqual(shown.code, 0, shown.stderr)
        assert.strictEqual(JSON.parse(shown.stdout).account.id, account_id)
        const refused = yield* svc(["admin", "account", "--account", account_id], {
          ...env,
          extra: { SVC_ADMIN_TOKEN: "wrong-token" }
        })
        assert.strictEqual(refused.code, 1, refused.stderr)
      })
    )

    it.effect("bin/svc.mjs starts on the machine's node (re-executing on the pinned one when older)", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        // npm puts node_modules/.bin first on PATH; the machine's own node is the first one outside it.
        const machineNode =
          (process.env.PATH ?? "")
            .split(delimiter)
            .filter((dir) => !dir.includes("node_modules"))
            .map((dir) => join(dir, "node"))
            .find((path) => existsSync(path)) ?? "node"
        const env = { baseUrl: app.url, home: freshHome() }
        yield* Effect.promise(() => start(["init"], env, [machineNode, svcBin]).done)
        const run = yield* Effect.promise(() => start(["usage", "--json"], env, [machineNode, svcBin]).done)
        assert.strictEqual(run.code, 0, run.stderr)
        assert.strictEqual(JSON.parse(run.stdout).plan, "trial")
      })
    )
  })
})

describe("svc login by browser callback (RFC 8252)", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("opens /login with a loopback redirect, takes the code from the callback, exchanges it", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const signIns = yield* SignIn
        const managementTokens = yield* ManagementTokens
        const home = freshHome()
        // The "browser" records the URL it was asked to open; the test plays the service's redirect.
        const opened = join(home, "opened-url")
        const browser = join(home, "browser.sh")
        writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`, { mode: 0o755 })
        const env = { baseUrl: app.url, home, extra: { SVC_NO_BROWSER: "", BROWSER: browser } }
        const login = start(["login"], env)
        yield* waitFor(() => (existsSync(opened) ? readFileSync(opened, "utf8") : ""), /redirect_uri=/)
        const url = new URL(readFileSync(opened, "utf8"))
        assert.strictEqual(url.pathname, "/login")
        const redirect = new URL(url.searchParams.get("redirect_uri")!)
        assert.strictEqual(redirect.hostname, "127.0.0.1")
        const person = yield* signIn(app, "svc-browser@example.com", { ip: "10.72.0.2" })
        const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
        const code = yield* Effect.orDie(signIns.exchangeCode(governor))
        redirect.searchParams.set("code", code)
        redirect.searchParams.set("state", url.searchParams.get("state")!)
        const callback = yield* Effect.promise(() => fetch(redirect).then((r) => r.status))
        assert.strictEqual(callback, 200)
        const finished = yield* Effect.promise(() => login.done)
        assert.strictEqual(finished.code, 0, finished.stderr)
        assert.include(finished.stdout, "Signed in as svc-browser@example.com")
        assert.match(configOf(home).management_token, /^svcm_/)
      })
    )
  })
})
