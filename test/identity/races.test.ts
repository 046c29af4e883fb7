import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { linkTokenIn, mailTo, post } from "./support.ts"

const freshIp = ipSequence("10.69")

describe(`identity races (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("starts racing for one email: only the newest sign-in stays usable", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        for (let round = 0; round < 4; round++) {
          const email = `start-race${round}@example.com`
          const replies = yield* Effect.all(
            Array.from({ length: 3 }, () => post(app, "/v1/auth/email/start", { email }, { ip: freshIp() })),
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
  })
})
