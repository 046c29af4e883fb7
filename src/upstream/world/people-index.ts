import type { Ctx } from "./context.ts"
import { personFields } from "./people.ts"
import { SIZES } from "./sizes.ts"
import { FIRST_NAMES, LAST_NAMES, ROLES, SCHOOLS, SENIORITY } from "./words.ts"

/**
 * Search facts for all people, built on the first search of a world: one byte or short per
 * field and person, plus a postings list per field value (about 6 MB for 120,000 people).
 * Searches start from the smallest postings list that a query term or filter implies, so a
 * selective query touches hundreds of people instead of all of them.
 */
export interface Postings {
  readonly offsets: Int32Array
  readonly items: Int32Array
}

export interface PeopleTable {
  readonly first: Uint8Array
  readonly last: Uint8Array
  readonly sen: Uint8Array
  readonly role: Uint8Array
  readonly school: Uint8Array
  readonly anon: Uint8Array
  readonly prom: Uint8Array
  readonly company: Uint16Array
  readonly past1: Uint16Array
  readonly past2: Uint16Array
  readonly by: {
    readonly first: Postings
    readonly last: Postings
    readonly sen: Postings
    readonly role: Postings
    readonly school: Postings
    readonly company: Postings
    readonly past: Postings
  }
  /** Scratch marks for de-duplicating candidates; `stamp` makes clearing unnecessary. */
  readonly seen: Uint32Array
  stamp: number
}

const postings = (values: number, n: number, columns: ReadonlyArray<ArrayLike<number>>): Postings => {
  const offsets = new Int32Array(values + 1)
  for (const col of columns) for (let i = 0; i < n; i++) offsets[col[i]! + 1]!++
  for (let v = 0; v < values; v++) offsets[v + 1]! += offsets[v]!
  const fill = offsets.slice(0, values)
  const items = new Int32Array(n * columns.length)
  for (const col of columns) for (let i = 0; i < n; i++) items[fill[col[i]!]!++] = i
  return { offsets, items }
}

/** Each world's table, built at its first use. */
const peopleTables = new WeakMap<Ctx, PeopleTable>()

export const peopleTable = (ctx: Ctx): PeopleTable => {
  const built = peopleTables.get(ctx)
  if (built !== undefined) return built
  const n = SIZES.people
  const first = new Uint8Array(n)
  const last = new Uint8Array(n)
  const sen = new Uint8Array(n)
  const role = new Uint8Array(n)
  const school = new Uint8Array(n)
  const anon = new Uint8Array(n)
  const prom = new Uint8Array(n)
  const company = new Uint16Array(n)
  const past1 = new Uint16Array(n)
  const past2 = new Uint16Array(n)
  for (let i = 0; i < n; i++) {
    const f = personFields(ctx, i)
    first[i] = f.first
    last[i] = f.last
    sen[i] = f.seniority
    role[i] = f.role
    school[i] = f.school
    anon[i] = f.anonymous ? 1 : 0
    prom[i] = Math.min(255, Math.floor(Math.log2(f.followers + 1) * 10))
    company[i] = f.company
    past1[i] = f.past1
    past2[i] = f.past2
  }
  const t: PeopleTable = {
    first,
    last,
    sen,
    role,
    school,
    anon,
    prom,
    company,
    past1,
    past2,
    by: {
      first: postings(FIRST_NAMES.length, n, [first]),
      last: postings(LAST_NAMES.length, n, [last]),
      sen: postings(SENIORITY.length, n, [sen]),
      role: postings(ROLES.length, n, [role]),
      school: postings(SCHOOLS.length, n, [school]),
      company: postings(SIZES.companies, n, [company]),
      past: postings(SIZES.companies, n, [past1, past2])
    },
    seen: new Uint32Array(n),
    stamp: 0
  }
  peopleTables.set(ctx, t)
  return t
}

/** Number of people listed under the given values of one postings list. */
export const postingsSize = (p: Postings, values: Uint8Array): number => {
  let size = 0
  for (let v = 0; v < values.length; v++) if (values[v] === 1) size += p.offsets[v + 1]! - p.offsets[v]!
  return size
}
