import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { codeFor, mailTo, signIn } from "../identity/support.ts"
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

      it.effect(
        "every form refuses another site by Origin, by Referer without Origin, and by Sec-Fetch-Site; its own pages and programs pass",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const ip = "10.77.0.3"
            const submit = (path: string, body: string, headers: Record<string, string>) =>
              app.call(path, { method: "POST", headers: { "content-type": form, ...headers }, body, ip })
            const foreign: ReadonlyArray<Record<string, string>> = [
              { origin: "https://evil.example" },
              // A sandboxed frame or a data: page posts with an opaque origin.
              { origin: "null" },
              { origin: "http://svc.test.evil.example" },
              { referer: "https://evil.example/login.html" },
              { referer: "not a url" },
              { "sec-fetch-site": "cross-site" },
              { "sec-fetch-site": "same-site", origin: "http://svc.test" },
              { "sec-fetch-site": "same-origin", origin: "https://evil.example" }
            ]
            const paths = [
              "/login",
              "/login/code",
              "/login/link",
              "/claim",
              "/recover",
              "/recover/rekey",
              "/login/some-interaction/email",
              "/login/some-interaction/code",
              "/upgrade",
              "/checkout/cs_unknown/pay",
              "/activate",
              "/logout",
              "/dashboard/keys"
            ]
            for (const path of paths)
              for (const headers of foreign) {
                const refused = yield* submit(path, "email=victim%40example.com", headers)
                assert.strictEqual(refused.status, 403, `${path} ${JSON.stringify(headers)}`)
                assert.include(refused.body, "This form was sent from another site.")
              }
            assert.deepStrictEqual(
              yield* mailTo("victim@example.com"),
              [],
              "no refused form started anything"
            )

            // The service's own pages (their origin, or their address as Referer) and a program
            // (no Origin, no Referer: no browser, so no other site behind it) are served.
            for (const [email, headers] of [
              ["own-origin@example.com", { origin: "http://svc.test", "sec-fetch-site": "same-origin" }],
              ["own-referer@example.com", { referer: "http://svc.test/login" }],
              // The address the request was sent to (its Host), as a proxy-less deployment sees it.
              ["own-host@example.com", { origin: app.url }],
              ["program@example.com", {}]
            ] as const) {
              const served = yield* submit("/login", `email=${encodeURIComponent(email)}`, headers)
              assert.strictEqual(served.status, 200, `${email}: ${served.body}`)
              assert.lengthOf(yield* mailTo(email), 1)
            }
            // Pages send their referrer to the service only, which makes browsers send their Origin.
            const login = yield* app.call("/login", { ip })
            assert.strictEqual(login.headers.get("referrer-policy"), "same-origin")
          })
      )

      it.effect(
        "the emailed link's page names the address it signs in, and the other sign-in it would replace here",
        () =>
          Effect.gen(function* () {
            const app = yield* TestApp
            const ip = "10.77.0.4"
            // Someone else's link for their own address, and a person signed in in this browser.
            const { token } = yield* codeFor(app, "link-sender@example.com", { ip: "10.77.0.5" })
            const person = yield* signIn(app, "link-victim@example.com", { ip })
            const cookie = `svc_session=${person.management_token}`
            const signedInHere = yield* app.call(`/login?token=${token}`, { headers: { cookie }, ip })
            assert.strictEqual(signedInHere.status, 200)
            assert.include(
              signedInHere.body,
              "This link signs you in as <strong>link-sender@example.com</strong> in this browser."
            )
            assert.include(
              signedInHere.body,
              "This browser is signed in as <strong>link-victim@example.com</strong>. Continuing signs"
            )
            assert.include(signedInHere.body, "Sign in as link-sender@example.com")
            // A browser without a sign-in gets no warning; the page consumed nothing.
            const fresh = yield* app.call(`/login?token=${token}`, { ip })
            assert.include(fresh.body, "This link signs you in as <strong>link-sender@example.com</strong>")
            assert.notInclude(fresh.body, "This browser is signed in as")
            // The same address: said plainly, no alarm.
            const own = yield* codeFor(app, "link-victim@example.com", { ip })
            const same = yield* app.call(`/login?token=${own.token}`, { headers: { cookie }, ip })
            assert.include(same.body, "already signed in as <strong>link-victim@example.com</strong>")
            // A dead link says so before any button.
            const dead = yield* app.call(`/login?token=${"x".repeat(43)}`, { ip })
            assert.strictEqual(dead.status, 401)
            assert.include(dead.body, "This sign-in link is wrong, used or expired")
            assert.notInclude(dead.body, "/login/link")
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
            "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
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
