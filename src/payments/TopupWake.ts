import { Context, Effect, Layer, Queue } from "effect"

/**
 * Wakes this instance's top-up worker when a charge here armed a top-up, so the local rail pays
 * it at once; the worker also looks on its own, for top-ups armed on other instances.
 */
export class TopupWake extends Context.Service<TopupWake, Queue.Queue<string>>()("payments/TopupWake") {
  // Bound: 64 top-up ids (dropping): one dropped is found by the top-up poll's next round.
  static readonly layer = Layer.effect(TopupWake, Queue.dropping<string>(64))
  /** The top-up ids a charge reports (most charges arm none). */
  static readonly armed = (wake: Queue.Queue<string>, topupId: string | null | undefined) =>
    topupId === null || topupId === undefined ? Effect.void : Effect.asVoid(Queue.offer(wake, topupId))
}
