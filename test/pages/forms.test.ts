import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { testOperations } from "../support/testOperations.ts"

const form = "application/x-www-form-urlencoded"

/** The page forms as plain HTTP: limits, content types, CSRF and the headers every page sends. */
describe(`page forms over HTTP (${storeName})`, () => {
  layer(testApp(testOperations, { maxBodyBytes: 1024 }), { timeout: 60_000, excludeTestServices: true })(
    (it) => {
      it.effect(
        "a form over the body limit is 413, announced or not; not a form 415; from another site 403",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const big = `email=${"a".repeat(2000)}%40example.com`
            const announced = yield* app.call("/login", {
              method: "POST",
              headers: { "content-type": form },
              body: big,
              ip: "10.77.0.1"
            })
            assert.strictEqual(announced.status, 413)
            assert.include(announced.body, "The form is larger than 1024 bytes.")
            const streamed = yield* Effect.promise(() =>
              fetch(`${app.url}/recover`, {
                method: "POST",
                headers: { "content-type": form, "x-forwarded-for": "10.77.0.1" },
                body: new ReadableStream({
                  start(controller) {
                    controller.enqueue(new TextEncoder().encode(big))
                    controller.close()
                  }
                }),
                duplex: "half"
              } as RequestInit)
            )
            assert.strictEqual(streamed.status, 413)
            const json = yield* app.call("/login", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ email: "a@example.com" }),
              ip: "10.77.0.1"
            })
            assert.strictEqual(json.status, 415)
            // A form another site submits is refused before it is read (login CSRF).
            const crossSite = yield* app.call("/login", {
              method: "POST",
              headers: { "content-type": form, "sec-fetch-site": "cross-site" },
              body: "email=victim%40example.com",
              ip: "10.77.0.1"
            })
            assert.strictEqual(crossSite.status, 403)
            assert.include(crossSite.body, "This form was sent from another site.")
          })
      )

      it.effect("cookie-authenticated forms need the session's CSRF field; pages send their policy", () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = "10.77.0.2"
          const session = yield* signIn(app, "csrf@example.com", { ip })
          const cookie = `svc_session=${session.management_token}`
          const page = yield* app.call("/activate", { headers: { cookie }, ip })
          assert.strictEqual(page.status, 200)
          assert.strictEqual(page.headers.get("cache-control"), "no-store")
          assert.include(
            page.headers.get("content-security-policy") ?? "",
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
          )
          const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1]
          assert.isDefined(csrf)

          const post = (body: string, headers: Record<string, string> = { cookie }) =>
            app.call("/activate", { method: "POST", headers: { "content-type": form, ...headers }, body, ip })
          assert.strictEqual(
            (yield* post("user_code=BCDF-GHJK&decision=approve")).status,
            403,
            "no CSRF field"
          )
          assert.strictEqual(
            (yield* post("user_code=BCDF-GHJK&decision=approve&csrf=x")).status,
            403,
            "a wrong one"
          )
          assert.strictEqual(
            (yield* post(`user_code=BCDF-GHJK&decision=approve&csrf=${csrf}`, {})).status,
            401,
            "no cookie"
          )
          const right = yield* post(`user_code=BCDF-GHJK&decision=approve&csrf=${encodeURIComponent(csrf!)}`)
          assert.strictEqual(right.status, 400, "the right field reaches the service (an unknown code)")
          assert.include(right.body, "No pending sign-in has this code")

          // Another session's field does not fit this session.
          const other = yield* signIn(app, "other@example.com", { ip })
          const foreign = yield* post(
            `user_code=BCDF-GHJK&decision=approve&csrf=${encodeURIComponent(csrf!)}`,
            {
              cookie: `svc_session=${other.management_token}`
            }
          )
          assert.strictEqual(foreign.status, 403)

          // The redirect page names the loopback origin its form may end at, and nothing else.
          const redirect = yield* app.call(
            `/login?redirect_uri=${encodeURIComponent("http://127.0.0.1:4567/cb")}&state=s`,
            { ip }
          )
          assert.strictEqual(redirect.status, 200)
          assert.include(
            redirect.headers.get("content-security-policy") ?? "",
            "form-action 'self' http://127.0.0.1:4567;"
          )
          // CSP cannot name an IPv6 literal: [::1] is allowed as that port on any host.
          const ipv6 = yield* app.call(
            `/login?redirect_uri=${encodeURIComponent("http://[::1]:4567/cb")}&state=s`,
            {
              ip
            }
          )
          assert.strictEqual(ipv6.status, 200)
          assert.include(
            ipv6.headers.get("content-security-policy") ?? "",
            "form-action 'self' http://*:4567;"
          )
          const refused = yield* app.call(
            `/login?redirect_uri=${encodeURIComponent("http://example.com/cb")}`,
            { ip }
          )
          assert.strictEqual(refused.status, 400)
          assert.include(refused.headers.get("content-security-policy") ?? "", "form-action 'self';")
        })
      )
    }
  )
})
