import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ManagementTokens } from "../../src/services/ManagementTokens.ts"
import { SignIn } from "../../src/services/SignIn.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { codeFor, linkTokenIn, mailTo, post, signIn } from "./support.ts"

const freshIp = ipSequence("10.69")

describe(`identity races (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("starts racing for one email from one IP: only the newest sign-in stays usable", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 4; round++) {
          const email = `start-race${round}@example.com`
          const ip = freshIp()
          const replies = yield* Effect.all(
            Array.from({ length: 3 }, () => post(app, "/v1/auth/email/start", { email }, { ip })),
            { concurrency: "unbounded" }
          )
          for (const reply of replies) assert.strictEqual(reply.status, 202)
          const links = (yield* mailTo(email)).map((mail) => linkTokenIn(mail.text, "/login"))
          assert.lengthOf(links, 3)
          const used = []
          for (const token of links)
            used.push((yield* post(app, "/v1/auth/email/verify", { token }, { ip: freshIp() })).status)
          assert.deepStrictEqual(
            used.filter((status) => status === 200).length,
            1,
            `round ${round}: ${JSON.stringify(used)}`
          )
        }
      })
    )

    it.effect("starts racing for one email from three IPs: each keeps its own sign-in", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const email = "start-race-ips@example.com"
        const ips = [freshIp(), freshIp(), freshIp()]
        const replies = yield* Effect.all(
          ips.map((ip) => post(app, "/v1/auth/email/start", { email }, { ip })),
          { concurrency: "unbounded" }
        )
        for (const reply of replies) assert.strictEqual(reply.status, 202)
        const links = (yield* mailTo(email)).map((mail) => linkTokenIn(mail.text, "/login"))
        assert.lengthOf(links, 3)
        for (const token of links)
          assert.strictEqual(
            (yield* post(app, "/v1/auth/email/verify", { token }, { ip: freshIp() })).status,
            200
          )
      })
    )

    it.effect("wrong tries racing are all counted, per IP and in total; the starting IP keeps its own", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const email = "tries-race@example.com"
        const owner = freshIp()
        const { code } = yield* codeFor(app, email, { ip: owner })
        const wrong = code === "000000" ? "111111" : "000000"
        const verify = (ip: string, guess: string) =>
          post(app, "/v1/auth/email/verify", { email, code: guess }, { ip })
        // Eight at once from one IP: five are counted against the code, and then it takes none from there.
        const one = freshIp()
        const fromOne = yield* Effect.all(
          Array.from({ length: 8 }, () => verify(one, wrong)),
          { concurrency: "unbounded" }
        )
        for (const reply of fromOne) assert.strictEqual(reply.status, 401)
        assert.strictEqual((yield* verify(one, code)).status, 401)
        // Ten at once from ten more IPs: with the five above, the other IPs' total (10) is passed.
        const fromMany = yield* Effect.all(
          Array.from({ length: 10 }, () => verify(freshIp(), wrong)),
          { concurrency: "unbounded" }
        )
        for (const reply of fromMany) assert.strictEqual(reply.status, 401)
        assert.strictEqual((yield* verify(freshIp(), code)).status, 401)
        // The IP that asked for the code still signs in with it.
        const right = yield* verify(owner, code)
        assert.strictEqual(right.status, 200, JSON.stringify(right.body))
      })
    )

    it.effect("one key rotated twice at once: one rotation, one NOT_FOUND, one active key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 3; round++) {
          const ip = freshIp()
          const minted = yield* app.mint(ip)
          const token = (yield* signIn(app, `rotate-race${round}@example.com`, { key: minted.key, ip }))
            .management_token
          const keyId = (yield* app.call("/v1/keys", { key: token, ip })).body.keys[0].key_id
          const replies = yield* Effect.all(
            [
              post(app, "/v1/keys/rotate", { key_id: keyId }, { key: token, ip }),
              post(app, "/v1/keys/rotate", { key_id: keyId }, { key: token, ip }),
              post(app, "/v1/keys/revoke", { key_id: keyId }, { key: token, ip })
            ],
            { concurrency: "unbounded" }
          )
          const rotations = replies.slice(0, 2).filter((reply) => reply.status === 200)
          assert.isAtMost(rotations.length, 1, JSON.stringify(replies.map((reply) => reply.status)))
          for (const reply of replies.slice(0, 2))
            if (reply.status !== 200) assert.strictEqual(reply.status, 404)
          assert.strictEqual(replies[2]!.status, 200)
          const active = (yield* app.call("/v1/keys", { key: token, ip })).body.keys.filter(
            (key: any) => key.revoked_at === null
          )
          assert.deepStrictEqual(
            active.map((key: any) => key.key_id),
            rotations.map((reply) => reply.body.key_id)
          )
          assert.strictEqual((yield* app.call("/v1/usage", { key: minted.key, ip })).status, 401)
        }
      })
    )

    it.effect("device flow: approved once, polled at once: one token, then invalid_grant", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const signIns = yield* SignIn
        const managementTokens = yield* ManagementTokens
        const ip = freshIp()
        const person = yield* signIn(app, "device-race@example.com", { ip })
        const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
        const started = yield* post(app, "/v1/auth/device", {}, { ip })
        assert.strictEqual(started.status, 200)
        assert.match(started.body.user_code, /^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$/)
        const decided = yield* Effect.orDie(
          signIns.decideDevice(governor, started.body.user_code.toLowerCase().replace("-", " "), true)
        )
        assert.deepStrictEqual(decided, { user_code: started.body.user_code, approved: true })
        // A second decision on the same code finds nothing pending.
        const again = yield* Effect.flip(signIns.decideDevice(governor, started.body.user_code, false))
        assert.strictEqual(again._tag, "InvalidInput")
        const replies = yield* Effect.all(
          Array.from({ length: 3 }, () =>
            post(app, "/v1/auth/device/token", { device_code: started.body.device_code }, { ip })
          ),
          { concurrency: "unbounded" }
        )
        const tokens = replies.filter((reply) => reply.status === 200)
        assert.lengthOf(tokens, 1, JSON.stringify(replies.map((reply) => reply.body)))
        assert.strictEqual(tokens[0]!.body.email, "device-race@example.com")
        assert.match(tokens[0]!.body.management_token, /^svcm_/)
        for (const reply of replies.filter((reply) => reply.status !== 200)) {
          assert.strictEqual(reply.status, 400)
          assert.include(["invalid_grant", "slow_down"], reply.body.error)
        }
        const after = yield* post(
          app,
          "/v1/auth/device/token",
          { device_code: started.body.device_code },
          { ip }
        )
        assert.strictEqual(after.body.error, "invalid_grant")
        const listed = yield* app.call("/v1/auth/tokens", { key: tokens[0]!.body.management_token, ip })
        assert.include(
          listed.body.tokens.map((token: any) => token.label),
          "device"
        )
      })
    )

    it.effect("a loopback exchange code works once, also when spent twice at once", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const signIns = yield* SignIn
        const managementTokens = yield* ManagementTokens
        const ip = freshIp()
        const person = yield* signIn(app, "exchange@example.com", { ip })
        const governor = yield* Effect.orDie(managementTokens.authenticate(person.management_token))
        const code = yield* Effect.orDie(signIns.exchangeCode(governor))
        const replies = yield* Effect.all(
          Array.from({ length: 3 }, () => post(app, "/v1/auth/exchange", { code }, { ip })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(replies.map((reply) => reply.status).sort(), [200, 401, 401])
        const won = replies.find((reply) => reply.status === 200)!
        assert.strictEqual(won.body.email, "exchange@example.com")
        assert.notStrictEqual(won.body.management_token, person.management_token)
        const garbage = yield* post(app, "/v1/auth/exchange", { code: "x".repeat(43) }, { ip })
        assert.strictEqual(garbage.status, 401)
        assert.strictEqual(garbage.body.code, "UNAUTHORIZED")
      })
    )
  })
})
