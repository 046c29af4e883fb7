import { type Quote, realtimeSurcharge } from "../../domain/pricing.ts"
import type { AnyOperation } from "../../operations/Operation.ts"

/** One way a call costs more than its base: `credits` for the item, or per `per` units of it. */
export interface PricingRule {
  readonly item: string
  readonly credits: number
  readonly per?: number
}

/** A data tool's price as its `_meta["svc/pricing"]` states it. */
export interface Pricing {
  readonly base: number
  readonly rules: ReadonlyArray<PricingRule>
}

export const pricingMetaKey = "svc/pricing"

type Rule = (...args: ReadonlyArray<number | boolean>) => Quote

/**
 * A tool's pricing read from its declaration's price rule (the one rule that quotes its calls):
 * the base is the quote of the cheapest call (every argument 0 or false); each argument that adds
 * a line is probed on its own: an argument whose quote grows with it (sections, results, ids) is
 * priced per unit, a flag (domain, settings, thread) by what it adds. The realtime surcharge is the
 * common `freshness` argument's.
 */
export const pricingOf = (operation: AnyOperation): Pricing => {
  const rule = operation.price.rule as unknown as Rule
  const cheapest = Array.from({ length: rule.length }, () => 0)
  const base = rule(...cheapest)
  const at = (index: number, value: number | boolean) =>
    rule(...cheapest.map((zero, position) => (position === index ? value : zero)))
  const credited = (quote: Quote, item: string) =>
    quote.lines.find((line) => line.item === item)?.credits ?? 0
  const rules = cheapest.flatMap((_, index): ReadonlyArray<PricingRule> => {
    const small = at(index, 100)
    const large = at(index, 110)
    const grows = small.credits !== large.credits
    const probe = grows ? large : at(index, true)
    return probe.lines
      .filter((line) => credited(base, line.item) === 0)
      .map((line) => {
        if (!grows) return { item: line.item, credits: line.credits }
        const added = line.credits - credited(small, line.item)
        return added % 10 === 0
          ? { item: line.item, credits: added / 10 }
          : { item: line.item, credits: added, per: 10 }
      })
  })
  return {
    base: base.credits,
    rules: operation.common ? [...rules, { item: "realtime", credits: realtimeSurcharge }] : rules
  }
}
