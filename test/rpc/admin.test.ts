import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { AdminClient } from "../../src/clients/operator-cli/AdminClient.ts"
import { alertMail, signInMail } from "../../src/services/mail/messages.ts"
import { Outbox } from "../../src/services/mail/Outbox.ts"
import { UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { rawExchange } from "../support/rawHttp.ts"
import { testOperations } from "../support/testOperations.ts"
import { runCli } from "./cli.ts"

/** Runs `f` with an admin RPC client of the test server, sending `token`. */
const withAdmin = <A, E, R>(
  f: (admin: AdminClient["Service"]) => Effect.Effect<A, E, R>,
  token = "test-admin-token-7f3a9c2e5b8d1f4a6c"
) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const call = Effect.gen(function* () {
      return yield* f(yield* AdminClient)
    })
    return yield* call.pipe(Effect.provide(AdminClient.layerFor(app.url, token)))
  })

const cliEnv = (url: string) => ({
  SVC_BASE_URL: url,
  SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c"
})

// Live services: the RPC client times its interrupt messages with the Clock, which a TestClock would freeze.
describe(`admin RPC and CLI (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("credit adds to the balance or grant pool, shown by /v1/usage", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.40.0.1")
        const credited = yield* withAdmin((admin) =>
          admin.credit({ accountId: account_id, credits: 500, kind: "balance" })
        )
        assert.strictEqual(credited.balanceCredits, 500)
        const granted = yield* withAdmin((admin) =>
          admin.credit({ accountId: account_id, credits: 25, kind: "grant" })
        )
        assert.strictEqual(granted.grantCredits, 25)
        const usage = yield* app.call("/v1/usage", { key, ip: "10.40.0.1" })
        assert.deepStrictEqual(usage.body.balance, { grant: 25, purchased: 500, total: 525 })
      })
    )

    it.effect("upstream sets the simulated world's fault knobs, and the CLI does too", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const faults = yield* UpstreamFaults
        const set = yield* withAdmin((admin) =>
          admin.upstream({ outage: true, errorRate: 0.5, paused: ["forum"] })
        )
        assert.deepStrictEqual(set, {
          latencyMs: { min: 0, max: 0 },
          errorRate: 0.5,
          outage: true,
          paused: ["forum"]
        })
        assert.isTrue((yield* faults.get).outage)
        const cli = yield* runCli(
          ["admin", "upstream", "--outage", "off", "--error-rate", "0", "--paused", "none"],
          cliEnv(app.url)
        )
        assert.strictEqual(cli.code, 0)
        assert.deepStrictEqual(JSON.parse(cli.stdout).paused, [])
        assert.isFalse((yield* faults.get).outage)
        const bad = yield* runCli(["admin", "upstream", "--paused", "nowhere"], cliEnv(app.url))
        assert.strictEqual(bad.code, 2)
      })
    )

    it.effect("plan changes the plan /v1/usage reports", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.40.1.1")
        const account = yield* withAdmin((admin) => admin.plan({ accountId: account_id, plan: "flex" }))
        assert.strictEqual(account.plan, "flex")
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip: "10.40.1.1" })).body.plan, "flex")
      })
    )

    it.effect("entitle limits the platforms: others answer NOT_ENTITLED", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.40.2.1")
        const account = yield* withAdmin((admin) =>
          admin.entitle({ accountId: account_id, platforms: ["forum"] })
        )
        assert.deepStrictEqual(account.entitlements, ["forum"])
        const refused = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip: "10.40.2.1" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.body.code, "NOT_ENTITLED")
        assert.strictEqual(
          (yield* app.call("/v1/forum/test-echo?value=x", { key, ip: "10.40.2.1" })).status,
          200
        )
      })
    )

    it.effect("suspend makes the account's keys UNAUTHORIZED until unsuspend", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.40.3.1")
        assert.strictEqual(
          (yield* withAdmin((admin) => admin.suspend({ accountId: account_id }))).state,
          "suspended"
        )
        const refused = yield* app.call("/v1/usage", { key, ip: "10.40.3.1" })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.body.code, "UNAUTHORIZED")
        assert.strictEqual(
          (yield* withAdmin((admin) => admin.unsuspend({ accountId: account_id }))).state,
          "active"
        )
        assert.strictEqual((yield* app.call("/v1/usage", { key, ip: "10.40.3.1" })).status, 200)
      })
    )

    it.effect("account reports the account, its keys and today's free-tier use", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key, account_id } = yield* app.mint("10.40.4.1")
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x&cost=7", { key, ip: "10.40.4.1" })).status,
          200
        )
        const report = yield* withAdmin((admin) => admin.account({ accountId: account_id }))
        assert.strictEqual(report.account.id, account_id)
        assert.strictEqual(report.account.plan, "trial")
        assert.strictEqual(report.keys.length, 1)
        assert.isTrue(key.endsWith(report.keys[0]!.hint.slice(-4)))
        assert.isFalse(report.keys[0]!.revoked)
        assert.deepStrictEqual(report.free_tier_used_today, [{ ip: "10.40.4.1", credits: 7 }])
        assert.strictEqual(report.in_flight, 0)
      })
    )

    it.effect("closing the free tier makes trial calls BUDGET_EXHAUSTED until it opens again", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint("10.40.5.1")
        const closed = yield* withAdmin((admin) => admin.freeTier({ open: false }))
        assert.isFalse(closed.freeTierOpen)
        const refused = yield* app.call("/v1/profnet/test-echo?value=x", { key, ip: "10.40.5.1" })
        assert.strictEqual(refused.status, 503)
        assert.strictEqual(refused.body.code, "BUDGET_EXHAUSTED")
        const opened = yield* withAdmin((admin) =>
          admin.freeTier({ open: true, globalDailyCredits: 100_000 })
        )
        assert.deepStrictEqual(opened, {
          freeTierOpen: true,
          globalDailyFreeCredits: 100_000,
          livePaused: false
        })
        assert.strictEqual(
          (yield* app.call("/v1/profnet/test-echo?value=x", { key, ip: "10.40.5.1" })).status,
          200
        )
        const lifted = yield* withAdmin((admin) => admin.freeTier({ open: true, globalDailyCredits: null }))
        assert.isNull(lifted.globalDailyFreeCredits)
      }).pipe(
        Effect.ensuring(
          Effect.ignore(withAdmin((admin) => admin.freeTier({ open: true, globalDailyCredits: null })))
        )
      )
    )

    it.effect("live pauses and resumes live fetching", () =>
      Effect.gen(function* () {
        assert.isTrue((yield* withAdmin((admin) => admin.live({ paused: true }))).livePaused)
        assert.isTrue((yield* withAdmin((admin) => admin.freeTier({ open: true }))).livePaused)
        assert.isFalse((yield* withAdmin((admin) => admin.live({ paused: false }))).livePaused)
      }).pipe(Effect.ensuring(Effect.ignore(withAdmin((admin) => admin.live({ paused: false })))))
    )

    it.effect("a wrong or missing token is refused with 401; an unknown account is AccountNotFound", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { account_id } = yield* app.mint("10.40.6.1")
        for (const [token, message] of [
          ["wrong-token", "The admin token is not valid."],
          ["", "Send the operator token"]
        ] as const) {
          const refused = yield* Effect.flip(
            withAdmin((admin) => admin.suspend({ accountId: account_id }), token)
          )
          assert.strictEqual(refused._tag, "RpcClientError")
          assert.include(String((refused as any).reason.cause), message)
        }
        const cli = yield* runCli(["admin", "live", "--pause"], {
          SVC_BASE_URL: app.url,
          SVC_ADMIN_TOKEN: "wrong-token"
        })
        assert.strictEqual(cli.code, 1)
        assert.include(JSON.parse(cli.stderr).message, "401")
        assert.include(JSON.parse(cli.stderr).message, "The admin token is not valid.")
        const report = yield* withAdmin((admin) => admin.account({ accountId: account_id }))
        assert.strictEqual(report.account.state, "active")
        const missing = yield* Effect.flip(
          withAdmin((admin) => admin.credit({ accountId: "acct_nope", credits: 1, kind: "grant" }))
        )
        assert.deepStrictEqual(missing._tag === "AccountNotFound" && missing.accountId, "acct_nope")
      })
    )

    it.effect(
      "without the token a huge body is refused with 401 before it is read; the service keeps serving",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          for (const authorization of ["", "Authorization: Bearer wrong-token\r\n"]) {
            const started = Date.now()
            // 50 MB announced, 1 KB sent: an answer at all shows the body was not awaited.
            const reply = yield* rawExchange(
              app.url,
              `POST /admin/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization}Content-Type: application/json\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n${"x".repeat(1024)}`
            )
            assert.strictEqual(reply.status, 401, reply.statusLine)
            assert.strictEqual(reply.headers["content-type"], "application/problem+json")
            assert.strictEqual(reply.body.code, "UNAUTHORIZED")
            assert.isBelow(Date.now() - started, 3_000)
          }
          assert.strictEqual((yield* app.call("/healthz")).status, 200)
        })
    )

    it.effect("with the token a body over the limit is PAYLOAD_TOO_LARGE, announced or chunked", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const head =
          "POST /admin/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer test-admin-token-7f3a9c2e5b8d1f4a6c\r\nContent-Type: application/json\r\n"
        const announced = yield* rawExchange(app.url, `${head}Content-Length: ${1024 * 1024}\r\n\r\n`)
        assert.strictEqual(announced.status, 413, announced.statusLine)
        assert.strictEqual(announced.body.code, "PAYLOAD_TOO_LARGE")
        const chunk = "x".repeat(8 * 1024)
        const chunks = Array.from({ length: 10 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join(
          ""
        )
        const chunked = yield* rawExchange(
          app.url,
          `${head}Transfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`
        )
        assert.strictEqual(chunked.status, 413, chunked.statusLine)
        assert.strictEqual(chunked.headers["content-type"], "application/problem+json")
        assert.strictEqual(chunked.body.code, "PAYLOAD_TOO_LARGE")
        assert.strictEqual((yield* withAdmin((admin) => admin.live({ paused: false }))).livePaused, false)
      })
    )

    it.effect("POST /admin/rpc is not shadowed by the catch-all; other methods there are NOT_FOUND", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const rpc = yield* app.call("/admin/rpc", {
          method: "POST",
          headers: {
            authorization: "Bearer test-admin-token-7f3a9c2e5b8d1f4a6c",
            "content-type": "application/json"
          },
          body: JSON.stringify({
            _tag: "Request",
            id: "1",
            tag: "live",
            payload: { paused: false },
            headers: []
          })
        })
        assert.strictEqual(rpc.status, 200)
        assert.strictEqual(rpc.body[0].exit._tag, "Success")
        const get = yield* app.call("/admin/rpc")
        assert.strictEqual(get.status, 404)
        assert.strictEqual(get.body.code, "NOT_FOUND")
      })
    )

    it.effect("outbox lists mail newest first, with the text body until it is delivered, by email too", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const outbox = yield* Outbox
        const sql = yield* SqlClient.SqlClient
        const signIn = (code: string) =>
          signInMail({
            to: "Reader@Outbox.test",
            code,
            link: `https://svc.test/sign-in/${code}`,
            minutes: 10,
            claiming: false
          })
        const first = yield* outbox.enqueue(signIn("111111"))
        const second = yield* outbox.enqueue(signIn("222222"))
        const other = yield* outbox.enqueue(
          alertMail({
            to: "other@outbox.test",
            accountId: "acct_x",
            threshold: 10,
            spendable: 5,
            upgradeUrl: "https://svc.test/upgrade"
          })
        )
        // As the Mailer leaves a delivered message: sent, bodies cleared.
        yield* sql`UPDATE outbox SET sent_at = created_at + 5, body_text = NULL, body_html = NULL,
          attempts = 1, last_error = 'ECONNREFUSED' WHERE id = ${first}`

        const listed = yield* withAdmin((admin) => admin.outbox({ email: "reader@outbox.test" }))
        assert.deepStrictEqual(
          listed.map((message) => message.id),
          [second, first]
        )
        const [pending, sent] = listed
        assert.strictEqual(pending!.to, "Reader@Outbox.test")
        assert.strictEqual(pending!.subject, "Your sign-in code: 222222")
        assert.strictEqual(pending!.kind, "sign_in")
        assert.isNull(pending!.sent_at)
        assert.strictEqual(pending!.attempts, 0)
        assert.include(pending!.text, "https://svc.test/sign-in/222222")
        assert.isNull(sent!.text)
        assert.strictEqual(sent!.sent_at, sent!.created_at + 5)
        assert.strictEqual(sent!.attempts, 1)
        assert.strictEqual(sent!.last_error, "ECONNREFUSED")

        const newest = yield* withAdmin((admin) => admin.outbox({ limit: 1 }))
        assert.deepStrictEqual(
          newest.map((message) => message.id),
          [other]
        )

        const env = cliEnv(app.url)
        const [cli, bad] = yield* Effect.all(
          [
            runCli(["admin", "outbox", "--email", "READER@outbox.test", "--limit", "1"], env),
            runCli(["admin", "outbox", "--limit", "0"], env)
          ],
          { concurrency: "unbounded" }
        )
        assert.strictEqual(cli.code, 0, cli.stderr)
        const printed = JSON.parse(cli.stdout)
        assert.strictEqual(printed.length, 1)
        assert.strictEqual(printed[0].id, second)
        assert.include(printed[0].text, "222222")
        assert.strictEqual(bad.code, 2)
      })
    )

    it.effect("the CLI prints the result as JSON and exits 0; a bad flag exits 2", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { account_id } = yield* app.mint("10.40.7.1")
        const env = { SVC_BASE_URL: app.url, SVC_ADMIN_TOKEN: "test-admin-token-7f3a9c2e5b8d1f4a6c" }
        const [shown, bad, unknown] = yield* Effect.all(
          [
            runCli(["admin", "account", "--account", account_id], env),
            runCli(["admin", "credit", "--account", account_id, "--credits", "many"], env),
            runCli(["admin", "suspend", "--account", "acct_nope"], env)
          ],
          { concurrency: "unbounded" }
        )
        assert.strictEqual(shown.code, 0, shown.stderr)
        assert.strictEqual(JSON.parse(shown.stdout).account.id, account_id)
        assert.include(shown.stdout, '\n  "account": {')

        assert.strictEqual(bad.code, 2)
        assert.strictEqual(bad.stdout, "")
        assert.strictEqual(JSON.parse(bad.stderr).error, "InvalidArguments")

        assert.strictEqual(unknown.code, 1)
        assert.deepStrictEqual(JSON.parse(unknown.stderr), {
          error: "AccountNotFound",
          accountId: "acct_nope"
        })
      })
    )
  })
})
