/**
 * Where a call's credits come from and go back to: the free per-IP budget first, then the grant,
 * then the purchased balance. Pure arithmetic; the Ledger applies it to rows under locks.
 */
export interface Funding {
  readonly free_tier: number
  readonly grant: number
  readonly balance: number
}

export const noFunding: Funding = { free_tier: 0, grant: 0, balance: 0 }

export const total = (funding: Funding): number => funding.free_tier + funding.grant + funding.balance

/**
 * Draws `quoted` credits from what is available, in funding order. `undefined` when the sources
 * together cannot cover it (nothing is drawn then).
 */
export const draw = (quoted: number, available: Funding): Funding | undefined => {
  const free_tier = Math.min(Math.max(0, available.free_tier), quoted)
  const grant = Math.min(Math.max(0, available.grant), quoted - free_tier)
  const balance = Math.min(Math.max(0, available.balance), quoted - free_tier - grant)
  return free_tier + grant + balance < quoted ? undefined : { free_tier, grant, balance }
}

/**
 * Settles a reservation: `charged` (at most what was reserved) is taken in funding order from what
 * was reserved; the rest goes back to where it came from.
 */
export const split = (
  reserved: Funding,
  charged: number
): { readonly charged: Funding; readonly returned: Funding } => {
  const taken = draw(Math.min(Math.max(0, charged), total(reserved)), reserved) ?? noFunding
  return {
    charged: taken,
    returned: {
      free_tier: reserved.free_tier - taken.free_tier,
      grant: reserved.grant - taken.grant,
      balance: reserved.balance - taken.balance
    }
  }
}
