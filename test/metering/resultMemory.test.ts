import { assert, describe, it } from "@effect/vitest"
import { heldBytes, resultMemory } from "../../src/metering/ResultMemory.ts"
import type { Receipt } from "../../src/metering/receipt.ts"

const receipt = (id: string): Receipt => ({
  id,
  operation: "profnet.getProfile",
  quoted: 2,
  charged: 2,
  refunds: [],
  funding: { free_tier: 0, grant: 0, balance: 2 },
  idempotency_key: `key-${id}`,
  replayed: false,
  created_at: "2026-11-29T12:00:00.000Z"
})

const result = (chars: number) => JSON.stringify({ schema_version: 2, kind: "k", data: "x".repeat(chars) })

const stored = (id: string, chars = 100, replayUntil = 10_000) => ({
  fingerprint: `fp-${id}`,
  resultJson: result(chars),
  receipt: receipt(id),
  replayUntil
})

describe("the completed results an instance keeps in memory", () => {
  it("counts a result at the bytes V8 stores each character at and a fixed part, and keeps no more than its budget", () => {
    assert.strictEqual(heldBytes("{}"), 2 + 512)
    // Latin-1 is still one byte a character; one character past it makes the whole string two.
    assert.strictEqual(heldBytes('"caf\u00e9 \u00b7"'), 8 + 512)
    assert.strictEqual(heldBytes('"caf\u00e9 \u2014"'), 16 + 512)
    assert.strictEqual(heldBytes('"\u{1F600}"'), 8 + 512)
    // Room for exactly eight.
    const memory = resultMemory(8 * heldBytes(result(100)))
    const ids = ["a", "b", "c", "d", "e", "f", "g", "h"]
    for (const id of ids) memory.remember("acct", id, stored(id))
    // A replay makes "a" the most recently used, so "b" is the least: a ninth result pushes it out.
    assert.strictEqual(memory.replay("acct", "a", 0)?.receipt.id, "a")
    memory.remember("acct", "i", stored("i"))
    assert.isUndefined(memory.replay("acct", "b", 0))
    for (const id of [...ids.filter((id) => id !== "b"), "i"])
      assert.strictEqual(memory.replay("acct", id, 0)?.fingerprint, `fp-${id}`)
  })

  it("keys results by account and key, and remembering a key again replaces it without counting it twice", () => {
    const memory = resultMemory(8 * heldBytes(result(100)))
    memory.remember("acct-1", "k", stored("one"))
    memory.remember("acct-2", "k", stored("two"))
    assert.strictEqual(memory.replay("acct-1", "k", 0)?.receipt.id, "one")
    assert.strictEqual(memory.replay("acct-2", "k", 0)?.receipt.id, "two")
    for (let i = 0; i < 5; i++) memory.remember("acct-1", "k", stored(`again-${i}`))
    assert.strictEqual(memory.replay("acct-1", "k", 0)?.receipt.id, "again-4")
    assert.strictEqual(memory.replay("acct-2", "k", 0)?.receipt.id, "two")
  })

  it("forgets a result when its replay window ends, and never keeps one above an eighth of its budget", () => {
    const memory = resultMemory(8 * heldBytes(result(1000)))
    memory.remember("acct", "short", stored("short", 100, 500))
    assert.isDefined(memory.replay("acct", "short", 499))
    assert.isUndefined(memory.replay("acct", "short", 500))
    assert.isUndefined(memory.replay("acct", "short", 0))
    memory.remember("acct", "eighth", stored("eighth", 1000))
    assert.isDefined(memory.replay("acct", "eighth", 0))
    memory.remember("acct", "larger", stored("larger", 1001))
    assert.isUndefined(memory.replay("acct", "larger", 0))
  })
})
