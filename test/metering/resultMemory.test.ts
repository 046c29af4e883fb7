import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { resultMemory, type Stored } from "../../src/metering/ResultMemory.ts"
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
  created_at: "2026-11-29T12:00:00.000Z",
  key_id: "key_1"
})

const result = (chars: number, fill = "x") =>
  JSON.stringify({ schema_version: 2, kind: "k", data: fill.repeat(chars) })

const stored = (id: string, chars = 100, replayUntil = 10_000): Stored => ({
  fingerprint: `fp-${id}`,
  json: result(chars),
  answer: false,
  receipt: receipt(id),
  replayUntil
})

/** The bytes an entry takes in the ring: its fingerprint, result and receipt as UTF-8. */
const bytesOf = (entry: Stored) =>
  Buffer.byteLength(entry.fingerprint) +
  Buffer.byteLength(entry.json) +
  Buffer.byteLength(JSON.stringify(entry.receipt))

describe("the completed results an instance keeps in memory", () => {
  it("gives back what it was given, characters past ASCII, optional members and the kind of JSON included", () => {
    const memory = resultMemory(64 * 1024)
    const entry: Stored = {
      fingerprint: "f".repeat(64),
      answer: true,
      json: JSON.stringify({
        data: { name: "Zo\u00eb \u2014 \u6771\u4eac \u{1F600}", n: [1, 2.5, null] }
      }),
      receipt: {
        ...receipt("r-1"),
        refunds: [{ reason: "realtime_fallback", credits: 1 }],
        idempotency_key: null,
        app_id: "app_1"
      },
      replayUntil: 1_764_500_000_000
    }
    memory.remember("acct", "k", entry)
    assert.deepStrictEqual(memory.replay("acct", "k", 0), entry)
    // Read again (written again at the head by the first replay): still the same.
    assert.deepStrictEqual(memory.replay("acct", "k", 0), entry)
  })

  it("keeps no more than its budget, the oldest result going first, replayed or not", () => {
    const size = bytesOf(stored("a"))
    // Room for exactly eight.
    const memory = resultMemory(8 * size)
    const ids = ["a", "b", "c", "d", "e", "f", "g", "h"]
    for (const id of ids) memory.remember("acct", id, stored(id))
    for (const id of ids) assert.strictEqual(memory.replay("acct", id, 0)?.receipt.id, id)
    memory.remember("acct", "i", stored("i"))
    assert.isUndefined(memory.replay("acct", "a", 0))
    memory.remember("acct", "j", stored("j"))
    assert.isUndefined(memory.replay("acct", "b", 0))
    for (const id of [...ids.slice(2), "i", "j"])
      assert.strictEqual(memory.replay("acct", id, 0)?.fingerprint, `fp-${id}`)
    // Remembered again, a key is the newest.
    memory.remember("acct", "c", stored("c"))
    memory.remember("acct", "k", stored("k"))
    assert.isUndefined(memory.replay("acct", "d", 0))
    for (const id of ["c", "e", "f", "g", "h", "i", "j", "k"]) assert.isDefined(memory.replay("acct", id, 0))
  })

  it("wraps at the ring's end past an oldest entry that begins exactly at the head", () => {
    // Sizes in bytes: every key is two characters, so an entry's size is its base and its result's length.
    const base = bytesOf(stored("aa", 0))
    const a = 4 * Math.ceil((base + 1000) / 4)
    const entry = (id: string, bytes: number) => stored(id, bytes - base)
    const memory = resultMemory(8 * a)
    const remember = (id: string, bytes: number) => {
      const made = entry(id, bytes)
      assert.strictEqual(bytesOf(made), bytes)
      memory.remember("acct", id, made)
    }
    // The first lap: seven of a, one of a half, one of a quarter (the head at 7.75a).
    for (let i = 0; i < 7; i++) remember(`k${i}`, a)
    remember("k7", a / 2)
    remember("k8", a / 4)
    // The second lap lands the head at 7.5a, exactly where the oldest (k8) begins.
    for (let i = 0; i < 7; i++) remember(`m${i}`, a)
    remember("m7", a / 2)
    // Too long for the 0.5a before the end: k8 goes, and then m0 at the ring's start.
    remember("m8", a)
    for (const gone of ["k0", "k6", "k7", "k8", "m0"])
      assert.isUndefined(memory.replay("acct", gone, 0), gone)
    for (let i = 1; i <= 8; i++)
      assert.strictEqual(memory.replay("acct", `m${i}`, 0)?.fingerprint, `fp-m${i}`)
  })

  it("keys results by account and key, and remembering a key again replaces it", () => {
    const memory = resultMemory(8 * bytesOf(stored("again0")))
    memory.remember("acct-1", "k", stored("one"))
    memory.remember("acct-2", "k", stored("two"))
    assert.strictEqual(memory.replay("acct-1", "k", 0)?.receipt.id, "one")
    assert.strictEqual(memory.replay("acct-2", "k", 0)?.receipt.id, "two")
    for (let i = 0; i < 5; i++) memory.remember("acct-1", "k", stored(`again${i}`))
    assert.strictEqual(memory.replay("acct-1", "k", 0)?.receipt.id, "again4")
    assert.strictEqual(memory.replay("acct-2", "k", 0)?.receipt.id, "two")
  })

  it("forgets a result when its replay window ends, and never keeps one above an eighth of its budget", () => {
    const memory = resultMemory(8 * bytesOf(stored("eighth", 1000)))
    memory.remember("acct", "short", stored("short", 100, 500))
    assert.isDefined(memory.replay("acct", "short", 499))
    assert.isUndefined(memory.replay("acct", "short", 500))
    assert.isUndefined(memory.replay("acct", "short", 0))
    memory.remember("acct", "eighth", stored("eighth", 1000))
    assert.isDefined(memory.replay("acct", "eighth", 0))
    memory.remember("acct", "larger", stored("larger", 1001))
    assert.isUndefined(memory.replay("acct", "larger", 0))
  })

  it("over any sequence of results, answers only a key's latest, and keeps every key among the newest seven eighths of its budget", () => {
    const budget = 4096
    const keys = 25
    const step = fc.record({
      key: fc.nat(keys - 1),
      // Up to past an eighth of the budget, so that some are refused.
      chars: fc.nat(560),
      fill: fc.constantFrom("x", "\u00e9", "\u2014", "\u{1F600}")
    })
    fc.assert(
      fc.property(fc.array(step, { minLength: 150, maxLength: 300 }), (steps) => {
        const memory = resultMemory(budget)
        const latest = new Map<string, Stored>()
        // Every result written into the ring, newest last.
        const writes: Array<{ readonly key: string | undefined; readonly bytes: number }> = []
        steps.forEach((s, serial) => {
          const entry: Stored = {
            fingerprint: `fp-${serial}`,
            json: result(s.chars, s.fill),
            answer: s.key % 2 === 0,
            receipt: receipt(`r${serial}`),
            replayUntil: 10_000
          }
          memory.remember("acct", `k${s.key}`, entry)
          const bytes = bytesOf(entry)
          if (bytes > budget / 8) {
            // Refused, and the key's earlier result forgotten (its bytes stay in the ring until overwritten).
            latest.delete(`k${s.key}`)
            for (const [i, write] of writes.entries())
              if (write.key === `k${s.key}`) writes[i] = { key: undefined, bytes: write.bytes }
          } else {
            latest.set(`k${s.key}`, entry)
            writes.push({ key: `k${s.key}`, bytes })
          }
          // Within seven eighths of the budget, the newest writes' keys.
          const kept = new Set<string | undefined>()
          let total = 0
          for (let i = writes.length - 1; i >= 0 && total + writes[i]!.bytes <= (budget * 7) / 8; i--) {
            total += writes[i]!.bytes
            kept.add(writes[i]!.key)
          }
          for (let k = 0; k < keys; k++) {
            const key = `k${k}`
            const got = memory.replay("acct", key, 0)
            if (got !== undefined) assert.deepStrictEqual(got, latest.get(key))
            else {
              assert.isFalse(kept.has(key), `${key} was written within the budget and is gone`)
              latest.delete(key)
            }
          }
        })
      }),
      { numRuns: 100 }
    )
  })
})
