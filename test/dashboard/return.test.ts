import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { codeIn, latestMail, signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const form = (
  app: TestApp["Service"],
  path: string,
  fields: ReadonlyArray<[string, string]>,
  cookie?: string
) =>
  Effect.promise(async () => {
    const response = await fetch(`${app.url}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-forwarded-for": "10.83.0.1",
        ...(cookie === undefined ? {} : { cookie })
      },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual"
    })
    await response.arrayBuffer()
    return {
      status: response.status,
      location: response.headers.get("location"),
      setCookie: response.headers.get("set-cookie")
    }
  })

describe(`back to the dashboard after signing in (${storeName})`, () => {
  layer(testApp(testOperations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a sign-in sent from /dashboard returns there; a signed-in /login?then=dashboard goes straight back",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const email = "returning@example.com"
          const started = yield* form(app, "/login", [
            ["email", email],
            ["then", "dashboard"]
          ])
          assert.strictEqual(started.status, 200)
          const code = codeIn((yield* latestMail(email)).text)
          const verified = yield* form(app, "/login/code", [
            ["email", email],
            ["code", code],
            ["then", "dashboard"]
          ])
          assert.strictEqual(verified.status, 303)
          assert.strictEqual(verified.location, "http://svc.test/dashboard")
          assert.match(verified.setCookie ?? "", /^svc_session=svcm_/)

          const owner = yield* signIn(app, "returning-2@example.com", { ip: "10.83.0.2" })
          const again = yield* Effect.promise(() =>
            fetch(`${app.url}/login?then=dashboard`, {
              headers: { cookie: `svc_session=${owner.management_token}` },
              redirect: "manual"
            })
          )
          assert.strictEqual(again.status, 303)
          assert.strictEqual(again.headers.get("location"), "http://svc.test/dashboard")
        })
    )
  })
})
