import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import {
  AuthRequired,
  createClient,
  followingOffer,
  IdempotencyKeyRequired,
  InvalidInput,
  KeyRequired,
  NotFound,
  QuoteExceedsMaxCredits,
  SvcClient,
  TrialCapExceeded,
  Unauthorized,
  UpstreamUnavailable
} from "../../src/clients/sdk/index.ts"
import { declarations } from "../../src/contract/operations/index.ts"
import { operations } from "../../src/operations/registry.ts"
import { UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { pay } from "../billing/support.ts"
import { signIn } from "../identity/support.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { ipSequence, paidKey } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { startProxy } from "./proxy.ts"

const freshIp = ipSequence("10.71")
const fast = { baseDelayMs: 5, maxDelayMs: 2_000 }

/** The Effect client of the test app for `key` (through `via`, a proxy, when given). */
const sdk = <A, E>(
  options: { readonly key?: string; readonly managementToken?: string; readonly via?: string },
  use: (client: SvcClient["Service"]) => Effect.Effect<A, E, SvcClient>
) =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const client = SvcClient.layer({ baseUrl: options.via ?? app.url, ...options, retry: fast })
    return yield* Effect.flatMap(SvcClient, use).pipe(Effect.provide(client))
  })

type AnyMethod = (
  request?: unknown
) => Effect.Effect<{ readonly kind: string; readonly cost: { readonly charged: number } }, unknown>

describe("the SDK (src/clients/sdk) against the running service", () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("calls every data operation of the registry, each answering its typed envelope", () =>
      Effect.gen(function* () {
        const { key } = yield* paidKey(freshIp(), 10_000)
        yield* sdk({ key }, (client) =>
          Effect.forEach(declarations, (declaration) =>
            Effect.gen(function* () {
              const method = (client as unknown as Record<string, AnyMethod>)[declaration.id]
              assert.isFunction(method, `the SDK has no method ${declaration.id}`)
              const envelope = yield* method!({ query: sampleArguments[declaration.id], headers: {} })
              assert.strictEqual(envelope.kind, declaration.kind, declaration.id)
              assert.isAbove(envelope.cost.charged, 0, declaration.id)
            })
          )
        )
      })
    )

    it.effect("answers each error family with its error class", () =>
      Effect.gen(function* () {
        const ip = freshIp()
        const app = yield* TestApp
        const { key } = yield* app.mint(ip)
        const identifier = sampleArguments.getProfile!.identifier as string
        yield* sdk({ key }, (client) =>
          Effect.gen(function* () {
            const invalid = yield* Effect.flip(
              client.getProfile({ query: { identifier: "no such/shape!" }, headers: {} })
            )
            assert.instanceOf(invalid, InvalidInput)
            const missing = yield* Effect.flip(
              client.getProfile({ query: { identifier: "nobody-here-zz9zz9zz" }, headers: {} })
            )
            assert.instanceOf(missing, NotFound)
            const capped = yield* Effect.flip(
              client.getProfile({ query: { identifier, freshness: "realtime" }, headers: {} })
            )
            assert.instanceOf(capped, TrialCapExceeded)
            const ceiling = yield* Effect.flip(
              client.getProfile({ query: { identifier, max_credits: 1 }, headers: {} })
            )
            assert.instanceOf(ceiling, QuoteExceedsMaxCredits)
            // A spend key on a management route.
            const governed = yield* Effect.flip(client.listKeys({ query: {} }))
            assert.instanceOf(governed, AuthRequired)
          })
        )
        yield* sdk({}, (client) => Effect.flip(client.getUsage())).pipe(
          Effect.map((error) => assert.instanceOf(error, KeyRequired))
        )
        yield* sdk({ key: "svc_live_notakeyatall000000000000" }, (client) =>
          Effect.flip(client.getUsage())
        ).pipe(Effect.map((error) => assert.instanceOf(error, Unauthorized)))
      })
    )

    it.effect("gives up at once on an outage longer than its longest wait, with UpstreamUnavailable", () =>
      Effect.gen(function* () {
        const { key } = yield* paidKey(freshIp(), 1_000)
        const faults = yield* UpstreamFaults
        yield* faults.set({ outage: true })
        const error = yield* sdk({ key }, (client) =>
          Effect.flip(client.searchPeople({ query: { keywords: "outage" }, headers: {} }))
        ).pipe(Effect.ensuring(faults.set({ outage: false })))
        assert.instanceOf(error, UpstreamUnavailable)
        if (error instanceof UpstreamUnavailable) assert.strictEqual(error.retry_after_seconds, 30)
      })
    )

    it.effect(
      "sends one Idempotency-Key per call and resends it after a dropped connection: charged once",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const proxy = yield* startProxy(app.url)
          const { key } = yield* paidKey(freshIp(), 1_000)
          const query = {
            identifier: sampleArguments.getProfile!.identifier as string,
            sections: ["about" as const]
          }
          proxy.plan("drop-after-answer")
          const envelope = yield* sdk({ key, via: proxy.url }, (client) =>
            client.getProfile({ query, headers: {} })
          )
          assert.strictEqual(envelope.cost.charged, 4)
          assert.strictEqual(proxy.seen.length, 2)
          assert.isString(proxy.seen[0]!.idempotencyKey)
          assert.strictEqual(proxy.seen[0]!.idempotencyKey, proxy.seen[1]!.idempotencyKey)

          proxy.plan({
            status: 429,
            problem: {
              type: "x",
              title: "Concurrency limit",
              status: 429,
              detail: "another call is in flight",
              message: "another call is in flight",
              code: "CONCURRENCY_LIMIT",
              is_retriable: true,
              doc_url: "x",
              retry_after_seconds: 0
            }
          })
          yield* sdk({ key, via: proxy.url }, (client) => client.getProfile({ query, headers: {} }))
          assert.strictEqual(proxy.seen.length, 4)
          assert.strictEqual(proxy.seen[2]!.idempotencyKey, proxy.seen[3]!.idempotencyKey)
          assert.notStrictEqual(proxy.seen[2]!.idempotencyKey, proxy.seen[0]!.idempotencyKey)

          const receipts = yield* sdk({ key }, (client) => client.listReceipts({ query: {} }))
          assert.strictEqual(receipts.receipts.length, 2)
          const usage = yield* sdk({ key }, (client) => client.getUsage())
          assert.strictEqual(usage.today.credits, 8)
        })
    )

    it.effect(
      "follows offer.resume: pays on INSUFFICIENT_CREDITS, then resends the same Idempotency-Key",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const proxy = yield* startProxy(app.url)
          const { key } = yield* paidKey(freshIp(), 0)
          const query = { identifier: sampleArguments.getProfile!.identifier as string }
          const offers: Array<string> = []
          const envelope = yield* sdk({ key, via: proxy.url }, (client) =>
            followingOffer(client.getProfile({ query, headers: {} }), (offer) =>
              Effect.gen(function* () {
                offers.push(offer.resume.action)
                const started = yield* client.startCheckout({ payload: { pack: "flex" } })
                yield* pay(app, started.checkout_url)
              }).pipe(Effect.orDie)
            )
          )
          assert.deepStrictEqual(offers, ["retry_same_idempotency_key"])
          assert.strictEqual(envelope.kind, "person")
          const calls = proxy.seen.filter((seen) => seen.path.startsWith("/v1/profnet/"))
          assert.strictEqual(calls.length, 2)
          assert.strictEqual(calls[0]!.idempotencyKey, calls[1]!.idempotencyKey)
          assert.strictEqual(envelope.receipt.idempotency_key, calls[0]!.idempotencyKey)
        })
    )

    it.effect("SvcClient.layerConfig reads SVC_BASE_URL and the variable the mint's setup.env sets", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const minted = yield* app.call("/v1/keys/mint", { method: "POST", ip: freshIp() })
        // `export NAME=<key>`: the name the CLI and the SDK read.
        const [, name, key] = /^export (\w+)=(\S+)$/.exec(minted.body.setup.env) ?? []
        assert.strictEqual(key, minted.body.key)
        const usage = yield* Effect.flatMap(SvcClient, (client) => client.getUsage()).pipe(
          Effect.provide(
            SvcClient.layerConfig.pipe(
              Layer.provide(
                ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SVC_BASE_URL: app.url, [name!]: key! }))
              )
            )
          )
        )
        assert.strictEqual(usage.account_id, minted.body.account_id)
      })
    )

    it.effect("one naming style: every method is lowerCamelCase, on SvcClient and createClient alike", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const names = yield* sdk({}, (client) => Effect.succeed(Object.keys(client)))
        const promised = Object.keys(createClient({ baseUrl: app.url }))
        assert.includeMembers(promised, names)
        assert.deepStrictEqual(
          names.filter((name) => !/^[a-z][A-Za-z0-9]*$/.test(name)),
          [],
          "methods not in lowerCamelCase"
        )
        assert.include(names, "getUsage")
      })
    )

    it.effect("data calls need no `headers`: the Idempotency-Key is optional, the SDK sends its own", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const { key } = yield* paidKey(ip, 100)
        const identifier = sampleArguments.getCompany!.identifier as string
        const viaEffect = yield* sdk({ key }, (client) => client.getCompany({ query: { identifier } }))
        assert.strictEqual(viaEffect.kind, "company")
        const viaPromise = yield* Effect.promise(() =>
          createClient({ baseUrl: app.url, key }).getCompany({ query: { identifier } })
        )
        assert.strictEqual(viaPromise.kind, "company")
        assert.notStrictEqual(viaPromise.receipt.idempotency_key, viaEffect.receipt.idempotency_key)
      })
    )

    it.effect("without the SDK's header a paid key is refused; with it the call goes through", () =>
      Effect.gen(function* () {
        const { key } = yield* paidKey(freshIp(), 100)
        const app = yield* TestApp
        const bare = yield* app.call(
          `/v1/profnet/companies?identifier=${sampleArguments.getCompany!.identifier}`,
          { key }
        )
        assert.strictEqual(bare.body.code, "IDEMPOTENCY_KEY_REQUIRED")
        assert.isDefined(IdempotencyKeyRequired)
      })
    )

    it.effect("manages keys with a management token, and the Promise facade rejects with error classes", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const ip = freshIp()
        const person = yield* signIn(app, "sdk-keys@example.com", { ip })
        const svc = createClient({ baseUrl: app.url, managementToken: person.management_token, retry: fast })
        const created = yield* Effect.promise(() => svc.createKey({ query: {}, payload: { label: "sdk" } }))
        assert.match(created.key, /^svc_/)
        const listed = yield* Effect.promise(() => svc.listKeys({ query: {} }))
        assert.include(
          listed.keys.map((k) => k.key_id),
          created.key_id
        )
        const rotated = yield* Effect.promise(() =>
          svc.rotateKey({ query: {}, payload: { key_id: created.key_id } })
        )
        assert.strictEqual(rotated.replaces, created.key_id)
        const alert = yield* Effect.promise(() =>
          svc.setBalanceAlert({ query: {}, payload: { threshold: 50 } })
        )
        assert.strictEqual(alert.threshold, 50)
        const withKey = createClient({ baseUrl: app.url, key: rotated.key })
        const usage = yield* Effect.promise(() => withKey.getUsage())
        assert.isNumber(usage.today.credits)
        const failure = yield* Effect.promise(() =>
          svc.revokeKey({ query: {}, payload: { key_id: "key_nosuchkey" } }).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        assert.instanceOf(failure, NotFound)
      })
    )
  })
})
