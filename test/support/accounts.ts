import { Effect } from "effect"
import { Admin } from "../../src/operator/Admin.ts"
import { TestApp } from "./app.ts"

/** Distinct client IPs under `prefix` (sent as X-Forwarded-For): trial keys of one IP share a budget. */
export const ipSequence = (prefix: string) => {
  let n = 0
  return () => {
    n++
    return `${prefix}.${Math.floor(n / 250)}.${n % 250}`
  }
}

/** A minted key whose account is moved to a paid plan with `credits` of purchased balance. */
export const paidKey = (ip: string, credits: number, plan: "flex" | "production" = "flex") =>
  Effect.gen(function* () {
    const app = yield* TestApp
    const admin = yield* Admin
    const minted = yield* app.mint(ip)
    yield* admin.setPlan(minted.account_id, plan)
    if (credits > 0) yield* admin.credit(minted.account_id, credits, "balance", "test purchase")
    return { ...minted, ip }
  }).pipe(Effect.orDie)
