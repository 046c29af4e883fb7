import { defaultRefundPolicy } from "../config.ts"
import { defaultHosts, type Hosts } from "../domain/identifiers/index.ts"
import type { Pack, PaymentRailName } from "../domain/plans.ts"
import { defaultPolicy } from "../domain/policy.ts"

/**
 * Where the published contract says it lives, the platform hosts it names, and what its problem
 * examples offer (upgrade URL, rails, packs, refund policy). `AppConfig` is one.
 */
export interface Publication {
  readonly baseUrl: string
  readonly hosts: Hosts
  readonly upgradeUrl: string
  readonly checkoutRails: ReadonlyArray<PaymentRailName>
  readonly refundPolicy: string
  readonly policy: { readonly packs: ReadonlyArray<Pack> }
}

/** A service started with no configuration (`npm run lint:openapi` lints its document). */
export const defaultPublication: Publication = {
  baseUrl: "http://127.0.0.1:8787",
  hosts: defaultHosts,
  upgradeUrl: "http://127.0.0.1:8787/upgrade",
  checkoutRails: ["local"],
  refundPolicy: defaultRefundPolicy,
  policy: defaultPolicy
}
