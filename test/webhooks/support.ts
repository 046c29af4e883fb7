import type { LookupAddress } from "node:dns"
import { isIP } from "node:net"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpServer } from "effect/http"
import type { SqlClient } from "effect/sql"
import { AppConfig, type AppConfigShape } from "../../src/config.ts"
import type { AnyOperation } from "../../src/operations/Operation.ts"
import type { OperationServices } from "../../src/operations/support.ts"
import { appLayer } from "../../src/service.ts"
import { Ids } from "../../src/services/Ids.ts"
import { WebhookResolver } from "../../src/webhooks/resolver.ts"
import { signIn } from "../identity/support.ts"
import { clientOf, type TestApp, worldUpstream } from "../support/app.ts"
import { testOperations } from "../support/testOperations.ts"

/** A resolver answering from a table a test can change between two lookups (a DNS answer that changes). */
export const changingResolver = (answers: Record<string, ReadonlyArray<LookupAddress>>) => {
  const asked: Array<string> = []
  return {
    answers,
    asked,
    resolve: async (hostname: string) => {
      asked.push(hostname)
      // An address is its own answer, as the system's resolver gives it.
      const family = isIP(hostname)
      if (family !== 0) return [{ address: hostname, family }]
      const known = answers[hostname]
      if (known === undefined) throw new Error(`${hostname}: no such name`)
      return known
    }
  }
}

/**
 * A whole service instance (its HTTP server, its delivery and top-up workers) over the database in
 * context, in a scope of its own: `stop` ends it as a shut-down instance ends (its fibers are
 * interrupted, its server closed), while the others go on.
 */
export const instance = (
  config: Partial<AppConfigShape> = {},
  resolve?: (hostname: string) => Promise<ReadonlyArray<LookupAddress>>,
  operations: ReadonlyArray<AnyOperation<OperationServices>> = testOperations
) =>
  Effect.gen(function* () {
    // The store only: this instance's configuration is its own.
    const database = Context.omit(AppConfig)(yield* Effect.context<SqlClient.SqlClient>())
    const scope = yield* Scope.make()
    const built = yield* Layer.buildWithScope(
      appLayer(operations, Layer.succeedContext(database), Ids.layer).pipe(
        Layer.provideMerge(worldUpstream),
        Layer.provide(AppConfig.layerTest({ trustedProxies: ["127.0.0.1", "::1"], ...config })),
        Layer.provide(resolve === undefined ? Layer.empty : Layer.succeed(WebhookResolver, resolve))
      ),
      scope
    )
    const address = Context.get(built, HttpServer.HttpServer).address
    const url = "port" in address ? `http://127.0.0.1:${address.port}` : "http://unix"
    return { ...clientOf(url), context: built, stop: Scope.close(scope, Exit.void) }
  })

/** A signed-in owner of a claimed account on `app`. */
export const ownerOn = (app: TestApp["Service"], email: string) =>
  Effect.gen(function* () {
    const ip = `10.89.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const minted = yield* app.mint(ip)
    const signedIn = yield* signIn(app, email, { key: minted.key, ip })
    return { ip, key: minted.key, accountId: minted.account_id, token: signedIn.management_token }
  })

/** Polls `effect` until `done` holds of its result (or fails the test after `timeoutMs`). */
export const eventually = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  done: (value: A) => boolean,
  what: string,
  timeoutMs = 20_000
) =>
  Effect.gen(function* () {
    const started = Date.now()
    for (;;) {
      const value = yield* effect
      if (done(value)) return value
      if (Date.now() - started > timeoutMs)
        return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("50 millis")
    }
  })
