// The arithmetic of a run's rounds: every figure the report gives is the median of its rounds in
// that one run, with their spread beside it, so that one noisy minute of a shared machine decides
// nothing; and the latency targets as ratios of two medians measured in the same run.

/** A figure over its rounds: their median, lowest and highest, and how many there were. */
export interface Summary {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly rounds: number
}

/** The middle value; of an even count, the mean of the two middle ones. NaN of none. */
export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The rounds' median and spread (min-max); undefined when no round measured the figure. */
export const summarise = (values: ReadonlyArray<number | undefined>): Summary | undefined => {
  const measured = values.filter((value): value is number => value !== undefined && Number.isFinite(value))
  if (measured.length === 0) return undefined
  return {
    median: median(measured),
    min: Math.min(...measured),
    max: Math.max(...measured),
    rounds: measured.length
  }
}

/** "1234 (1100-1300)": the median and, beside it, the spread of the rounds. */
export const withSpread = (summary: Summary | undefined, digits: number): string =>
  summary === undefined
    ? "-"
    : summary.rounds === 1
      ? summary.median.toFixed(digits)
      : `${summary.median.toFixed(digits)} (${summary.min.toFixed(digits)}-${summary.max.toFixed(digits)})`

/** `of / to`, or undefined when either is missing or `to` is not above 0. */
export const ratio = (of: number | undefined, to: number | undefined): number | undefined =>
  of === undefined || to === undefined || !(to > 0) ? undefined : of / to

/** A target of issue 68's table: a ratio that must be at least (`min`) or at most (`max`) a bound. */
export interface Target {
  readonly name: string
  readonly ratio: number | undefined
  readonly bound: { readonly atLeast: number } | { readonly atMost: number }
}

/** Whether the ratio meets its bound; undefined when it was not measured. */
export const met = (target: Target): boolean | undefined => {
  if (target.ratio === undefined) return undefined
  return "atLeast" in target.bound
    ? target.ratio >= target.bound.atLeast
    : target.ratio <= target.bound.atMost
}

/** "<= 1.5x" or ">= 0.40x". */
export const boundText = (target: Target): string =>
  "atLeast" in target.bound
    ? `>= ${target.bound.atLeast.toFixed(2)}x`
    : `<= ${target.bound.atMost.toFixed(2)}x`

/** One line of the targets table: name, measured ratio, bound, met. */
export const targetCells = (target: Target): ReadonlyArray<string> => {
  const verdict = met(target)
  return [
    target.name,
    target.ratio === undefined ? "-" : `${target.ratio.toFixed(3)}x`,
    boundText(target),
    verdict === undefined ? "not measured" : verdict ? "met" : "NOT met"
  ]
}
