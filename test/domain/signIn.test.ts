import { assert, describe, it } from "@effect/vitest"
import { mailboxOf, normalizeEmail } from "../../src/domain/signIn.ts"

describe("mailboxOf: the mailbox an address delivers to (the grant's once-per-person)", () => {
  it("drops the +tag, and at Gmail the dots and the googlemail.com spelling", () => {
    for (const [email, mailbox] of [
      ["farm@example.com", "farm@example.com"],
      ["farm+1@example.com", "farm@example.com"],
      ["farm+a+b@example.com", "farm@example.com"],
      ["f.arm@example.com", "f.arm@example.com"],
      ["f.arm@gmail.com", "farm@gmail.com"],
      ["f.a.r.m+news@googlemail.com", "farm@gmail.com"],
      ["farm@mail.gmail.com", "farm@mail.gmail.com"],
      ["Farm+X@Example.COM", "farm@example.com"]
    ] as const)
      assert.strictEqual(mailboxOf(email), mailbox, email)
  })

  it("leaves the stored address alone: sign-in keeps what was typed, lower-cased", () => {
    assert.strictEqual(normalizeEmail("  F.Arm+1@GMail.com "), "f.arm+1@gmail.com")
  })
})
