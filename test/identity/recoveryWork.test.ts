import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import * as Statement from "effect/sql/Statement"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"
import { mailTo, post, signIn } from "./support.ts"

const freshIp = ipSequence("10.83")

/**
 * Every SQL statement the server runs while handling a request that carries `x-statements: <tag>`,
 * in order, by tag: the statement transformer sees the request the statement runs for.
 */
const statements = new Map<string, Array<string>>()
const recordStatements: Statement.Transformer = (statement, _sql, fiber) => {
  const request = Context.getOption(fiber.context, HttpServerRequest.HttpServerRequest)
  const tag = Option.isSome(request) ? request.value.headers["x-statements"] : undefined
  if (tag !== undefined) statements.set(tag, [...(statements.get(tag) ?? []), statement.compile()[0]])
  return Effect.succeed(statement)
}

/**
 * The audit's recovery timing: a known email answered `POST /v1/recover` measurably slower than an
 * unknown one, because only it wrote links and mail. Now both run the same statements, so the
 * answer's timing has nothing to tell (asserted on the work, not on a clock).
 */
describe(`recovery does the same work for every address (${storeName})`, () => {
  layer(
    testApp(testOperations).pipe(
      Layer.provide(Layer.succeed(Statement.CurrentTransformer, recordStatements))
    ),
    { timeout: 60_000, excludeTestServices: true }
  )((it) => {
    it.effect(
      "known, unknown, never-claimed and two-account emails: the same statements, one message each",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const known = "work-known@example.com"
          const two = "work-two@example.com"
          const unclaimed = "work-unclaimed@example.com"
          const unknown = "work-unknown@example.com"
          const ip = freshIp()
          yield* signIn(app, known, { key: (yield* app.mint(ip)).key, ip })
          yield* signIn(app, two, { key: (yield* app.mint(ip)).key, ip })
          yield* signIn(app, two, { key: (yield* app.mint(ip)).key, ip: freshIp() })
          // A claim started and never finished: no account belongs to the address.
          yield* post(
            app,
            "/v1/auth/email/start",
            { email: unclaimed },
            { key: (yield* app.mint(ip)).key, ip }
          )

          for (const email of [known, unknown, two, unclaimed]) {
            const before = (yield* mailTo(email)).filter((mail) => mail.kind === "recovery").length
            const reply = yield* app.call("/v1/recover", {
              method: "POST",
              headers: { "content-type": "application/json", "x-statements": email },
              body: JSON.stringify({ email }),
              ip: freshIp()
            })
            assert.strictEqual(reply.status, 202, JSON.stringify(reply.body))
            const after = (yield* mailTo(email)).filter((mail) => mail.kind === "recovery").length
            assert.strictEqual(after, before + 1, `${email}: one message`)
          }
          const work = statements.get(known)
          assert.isDefined(work)
          assert.isTrue(
            work!.some((sql) => sql.includes("INSERT INTO outbox")),
            "the recording sees the request's statements"
          )
          for (const email of [unknown, two, unclaimed])
            assert.deepStrictEqual(statements.get(email), work, email)
        })
    )
  })
})
