import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Notifications } from "../../src/store/Notifications.ts"
import { freshDatabase, storeName } from "../support/database.ts"

const channel = "svc_test_reports"

describe(`notifications (${storeName})`, () => {
  layer(Notifications.layer.pipe(Layer.provideMerge(freshDatabase)), {
    timeout: 60_000,
    excludeTestServices: true
  })((it) => {
    it.effect("a report committed before caughtUp has reached the listener when caughtUp answers true", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const received: Array<string> = []
        let gaps = 0
        const listening = yield* (yield* Notifications).listen(channel, {
          onPayload: (payload) => received.push(payload),
          onGap: () => {
            gaps++
          },
          onListening: () => {}
        })
        // The subscription is made in the background; until then nothing can be said.
        while (!(yield* listening.caughtUp)) yield* Effect.sleep("10 millis")
        assert.strictEqual(gaps, 1)

        // Each report is committed by another session, then asked for at once (PostgreSQL delivers
        // it to the listening session a moment after the commit returns).
        for (let i = 0; i < 300; i++) {
          yield* sql`select pg_notify(${channel}, ${String(i)})`
          assert.isTrue(yield* listening.caughtUp)
          assert.strictEqual(received.at(-1), String(i), `report ${i} after caughtUp`)
        }
        // Requests waiting together share round trips and all see what was committed before them.
        yield* sql`select pg_notify(${channel}, 'together')`
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, () => listening.caughtUp),
          {
            concurrency: "unbounded"
          }
        )
        assert.isTrue(answers.every((answer) => answer))
        assert.strictEqual(received.at(-1), "together")
        assert.strictEqual(received.length, 301)
      }).pipe(Effect.scoped)
    )
  })
})
