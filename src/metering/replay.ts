import { Effect } from "effect"
import { AppConfig } from "../config.ts"
import type { Envelope } from "../contract/envelope.ts"
import type { Admitted, CallOutcome } from "./call.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import type { ResultMemory, Stored } from "./ResultMemory.ts"
import { envelopeJson, type Receipt } from "./receipt.ts"

/**
 * Replays: a completed Idempotency-Key's stored result, kept in this instance's memory and answered
 * again with its receipt marked `replayed`.
 */

/** The stored result of a completed Idempotency-Key, kept in memory for its replays. */
// hot path
export const rememberResult = <R>(call: Admitted<R>, resultJson: string, receipt: Receipt) => {
  const key = call.input.idempotencyKey
  if (key === undefined) return Effect.void
  return Effect.flatMap(AppConfig, ({ policy }) =>
    Effect.map(IdempotencyStore, (store) =>
      store.results.remember(call.caller.account.id, key, {
        fingerprint: call.fingerprint,
        json: resultJson,
        answer: false,
        receipt,
        replayUntil: Date.parse(receipt.created_at) + policy.replayWindowMs
      })
    )
  )
}

/** A completed key's answer again, from its stored result: the receipt marked `replayed`, and the JSON with it. */
const replayedAnswer = (resultJson: string, receipt: Receipt) => {
  const replayed = { ...receipt, replayed: true }
  return { json: envelopeJson(resultJson, replayed), receipt: replayed }
}

/**
 * A replay's outcome from its JSON and receipt. REST answers the JSON; the envelope's objects are
 * parsed from it only if a surface asks for them (MCP's structured content).
 *
 * A class, for its getter on the prototype: an object literal with a getter gets a hidden class of
 * its own (V8 keeps accessors in the class), made in the old generation on every replay, and that
 * class holds the getter's closure and through it the replay's JSON, so every replay's answer
 * outlived the young generation (docs/performance.md, round 22).
 */
class ReplayOutcome implements CallOutcome {
  readonly replayed = true
  readonly json: string
  readonly receipt: Receipt
  private parsed: Envelope | undefined
  constructor(json: string, receipt: Receipt) {
    this.json = json
    this.receipt = receipt
  }
  get envelope(): Envelope {
    this.parsed ??= JSON.parse(this.json) as Envelope
    return this.parsed
  }
}

const answerOf = ({ json, receipt }: { readonly json: string; readonly receipt: Receipt }): CallOutcome =>
  new ReplayOutcome(json, receipt)

export const replayOf = (resultJson: string, receipt: Receipt): CallOutcome =>
  answerOf(replayedAnswer(resultJson, receipt))

/** A replay from this instance's memory; the first one keeps the answer it makes in the result's place. */
export const replayFromMemory = (
  memory: ResultMemory,
  accountId: string,
  key: string,
  stored: Stored
): CallOutcome => {
  if (stored.answer) return answerOf(stored)
  const answer = replayedAnswer(stored.json, stored.receipt)
  memory.remember(accountId, key, { ...stored, ...answer, answer: true })
  return answerOf(answer)
}
