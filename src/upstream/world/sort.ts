/**
 * Stable descending sort that computes each key once: ranking keys hash or take logs, and a
 * comparator would recompute them O(n log n) times.
 */
export const sortDesc = <A>(xs: ReadonlyArray<A>, key: (a: A) => number): Array<A> => {
  const keys = new Float64Array(xs.length)
  const idx = new Int32Array(xs.length)
  for (let i = 0; i < xs.length; i++) {
    keys[i] = key(xs[i]!)
    idx[i] = i
  }
  idx.sort((a, b) => keys[b]! - keys[a]! || a - b)
  return Array.from(idx, (i) => xs[i]!)
}
