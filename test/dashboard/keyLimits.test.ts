import { assert, describe, it } from "@effect/vitest"
import type { Account } from "../../src/domain/accounts.ts"
import type { KeyListing } from "../../src/services/Keys.ts"
import { capText, limitArgsOf } from "../../src/surfaces/http/dashboard/keyLimits.ts"

const account: Account = {
  id: "acct_x",
  plan: "flex",
  state: "active",
  email: "x@example.com",
  claimed: true,
  grantCredits: 0,
  balanceCredits: 0,
  entitlements: ["profnet", "forum", "microblog"],
  createdAt: 0,
  alertThreshold: 0
}
const form = (fields: Record<string, string>) => ({ get: (name: string) => fields[name] ?? "" })
const key = (limits: Partial<KeyListing>): KeyListing => ({
  key_id: "key_x",
  label: null,
  hint: "svc_...abcd",
  created_at: "2026-11-25T00:00:00.000Z",
  last_used_at: null,
  revoked_at: null,
  parent_key_id: null,
  spend_cap_credits: null,
  cap_period: "total",
  platforms: null,
  may_delegate: false,
  spent_in_period: null,
  cap_resets_at: null,
  ...limits
})

describe("the Keys page's limit fields", () => {
  it("an empty form clears every limit: no cap, all platforms, no delegation", () => {
    assert.deepStrictEqual(limitArgsOf(form({}), account), {
      args: { spend_cap_credits: null, cap_period: "total", platforms: null, may_delegate: false }
    })
  })

  it("reads a cap, its period, some platforms and the delegation box", () => {
    assert.deepStrictEqual(
      limitArgsOf(
        form({
          spend_cap_credits: "500",
          cap_period: "day",
          "platform:forum": "on",
          "platform:profnet": "on",
          may_delegate: "on"
        }),
        account
      ),
      {
        args: {
          spend_cap_credits: 500,
          cap_period: "day",
          platforms: ["profnet", "forum"],
          may_delegate: true
        }
      }
    )
    const all = limitArgsOf(
      form({ "platform:forum": "on", "platform:profnet": "on", "platform:microblog": "on" }),
      account
    )
    assert.isTrue("args" in all && all.args.platforms === null, "every platform checked is all of them")
  })

  it("refuses a cap that is not a whole number of 1 or more", () => {
    for (const cap of ["0", "-3", "2.5", "lots", "1e3"])
      assert.match(
        (limitArgsOf(form({ spend_cap_credits: cap }), account) as { error: string }).error,
        /whole number/
      )
    const odd = limitArgsOf(form({ cap_period: "week" }), account)
    assert.isTrue("args" in odd && odd.args.cap_period === "total", "an unknown period is the default")
  })

  it("a child key's form never asks for delegation (a child never delegates)", () => {
    const child = key({ parent_key_id: "key_parent", spend_cap_credits: 5 })
    const read = limitArgsOf(form({ may_delegate: "on", spend_cap_credits: "5" }), account, child)
    assert.isTrue("args" in read && !("may_delegate" in read.args))
  })

  it("says what a cap has spent and when it starts afresh", () => {
    assert.strictEqual(capText(key({})), "none")
    assert.strictEqual(
      capText(
        key({
          spend_cap_credits: 1500,
          cap_period: "month",
          spent_in_period: 1200,
          cap_resets_at: "2026-12-01T00:00:00.000Z"
        })
      ),
      "1,200 of 1,500 credits spent this month (UTC); starts afresh 2026-12-01 00:00 UTC"
    )
  })
})
