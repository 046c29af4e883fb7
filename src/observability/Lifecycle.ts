import { Context, Effect, Layer } from "effect"

/**
 * Where the process is in its life: serving, or draining after SIGTERM. While it drains,
 * `/readyz` answers 503 (a load balancer stops sending new calls) and `/healthz` stays 200 (nothing
 * restarts it), and answers ask the client to close its connection.
 */
export class Lifecycle extends Context.Service<
  Lifecycle,
  {
    readonly draining: () => boolean
    readonly beginDrain: Effect.Effect<void>
  }
>()("observability/Lifecycle") {
  static readonly layer = Layer.sync(Lifecycle, () => {
    let draining = false
    return Lifecycle.of({
      draining: () => draining,
      beginDrain: Effect.sync(() => {
        draining = true
      })
    })
  })
}
