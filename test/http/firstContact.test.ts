import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { buy } from "../billing/support.ts"
import { post, signIn } from "../identity/support.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"

const freshIp = ipSequence("10.65")

/** What a newcomer met in the contract and the key list (issue 27, items 7 and 8). */
describe(`first contact: the contract and keys (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "OpenAPI states the Idempotency-Key's 8 to 128 characters and sections at most 4, once each",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const spec = (yield* app.call("/v1/openapi.json")).body
          const data = Object.entries(spec.paths as Record<string, any>).filter(([path]) =>
            /^\/v1\/(profnet|forum|microblog)\//.test(path)
          )
          assert.strictEqual(data.length, 17)
          for (const [path, item] of data) {
            const header = item.get.parameters.find((p: any) => p.name === "Idempotency-Key")
            assert.strictEqual(header.schema.minLength, 8, path)
            assert.strictEqual(header.schema.maxLength, 128, path)
            const ceiling = item.get.parameters.find((p: any) => p.name === "max_credits")
            if (path.endsWith("/resolve-url")) {
              assert.isUndefined(ceiling, `${path} takes only its url and the header`)
              continue
            }
            assert.isDefined(ceiling, `${path} takes max_credits`)
            // The contract's range, 0 to 9007199254740991, stated whole.
            assert.strictEqual(ceiling.schema.minimum, 0)
            assert.strictEqual(ceiling.schema.maximum, 9007199254740991)
          }
          const profile = spec.paths["/v1/profnet/profiles"].get.parameters
          const sections = profile.find((p: any) => p.name === "sections").schema
          assert.strictEqual(sections.maxItems, 4)
          assert.isTrue(sections.uniqueItems)
          const forumUser = spec.paths["/v1/forum/users"].get.parameters
          assert.strictEqual(forumUser.find((p: any) => p.name === "sections").schema.maxItems, 2)
          // Markdown shows `<id>` as text only inside a code span: the docs page no longer swallows it.
          assert.include(spec.paths["/v1/profnet/profiles"].get.description, "`urn:li:fsd_profile:<id>`")
          assert.notMatch(JSON.stringify(spec), /[^`]urn:li:fsd_profile:<id>/)
          // Five sections are refused by the server, as stated.
          const { key } = yield* app.mint(freshIp())
          const five = yield* app.call(
            `/v1/profnet/profiles?identifier=${sampleArguments.getProfile!.identifier}&sections=about,experience,education,skills,about`,
            { key, ip: freshIp() }
          )
          assert.strictEqual(five.status, 400)
          assert.strictEqual(five.body.param, "sections")
        })
    )

    it.effect(
      "the three resolve operations take only their url and the header, on REST, MCP and the SDK",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const client = yield* connect(`${app.url}/mcp`, { key, ip }, modes[0])
          const { tools } = yield* Effect.promise(() => client.listTools())
          for (const id of ["resolveUrl", "resolveForumUrl", "resolveMicroblogUrl"]) {
            const operation = operations.find((o) => o.id === id)!
            assert.deepStrictEqual(Object.keys(operation.params.fields), ["url"], id)
            const tool = tools.find((t) => t.name === id)!
            assert.deepStrictEqual(Object.keys(tool.inputSchema.properties ?? {}).sort(), [
              "idempotency_key",
              "url"
            ])
          }
          // `max_credits` and `freshness` are unknown parameters there, read as any unknown parameter
          // is (left aside): the call is answered and charged its price, not refused.
          const url = encodeURIComponent(sampleArguments.resolveUrl!.url as string)
          const answered = yield* app.call(
            `/v1/profnet/resolve-url?url=${url}&max_credits=0&freshness=realtime`,
            {
              key,
              ip
            }
          )
          assert.strictEqual(answered.status, 200, JSON.stringify(answered.body))
          assert.strictEqual(answered.body.cost.charged, 2)
          assert.strictEqual(answered.body.freshness.requested, "recent")
        }).pipe(Effect.scoped)
    )

    it.effect(
      "after a purchase, a new key of the account is a paid key (svc_), also from an older sign-in",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key, account_id } = yield* app.mint(ip)
          const session = yield* signIn(app, "buyer-keys@example.com", { key, ip })
          // The sign-in is used before the purchase, so whatever it remembers of the account is the trial.
          const before = yield* post(
            app,
            "/v1/keys",
            { label: "before" },
            { key: session.management_token, ip }
          )
          assert.match(before.body.key, /^svc_trial_/)
          yield* buy(app, "flex", { key, ip })
          const plan = (yield* app.call("/v1/usage", { key, ip })).body.plan
          assert.strictEqual(plan, "flex")
          const after = yield* post(
            app,
            "/v1/keys",
            { label: "after" },
            { key: session.management_token, ip }
          )
          assert.strictEqual(after.status, 201, JSON.stringify(after.body))
          assert.match(after.body.key, /^svc_(?!trial_)/)
          const usage = yield* app.call("/v1/usage", { key: after.body.key, ip })
          assert.strictEqual(usage.body.account_id, account_id)
        })
    )
  })
})
