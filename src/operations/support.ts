import { Effect } from "effect"
import { PlatformHosts } from "../config.ts"
import { InvalidInput, NotFound } from "../contract/errors.ts"
import { canonicalJson } from "../domain/fingerprint.ts"
import type { Hosts, Parsed } from "../domain/identifiers/index.ts"
import { Cache, type Fetched } from "../services/Cache.ts"
import type { Domains } from "../services/Domains.ts"
import { InvalidCursor, type Page } from "../upstream/contract.ts"
import { type Args, type Method, Upstream } from "../upstream/Upstream.ts"
import type { Freshness, RunResult } from "./Operation.ts"

/** What data operations need to run. */
export type OperationServices = Cache | Upstream | Domains

export const invalid = (param: string, message: string) => new InvalidInput({ message, param })

/**
 * A list of sections, each at most once (so at most one of each), sorted: the price counts what is
 * delivered and the fingerprint ignores the order. A repeat or too many is INVALID_INPUT naming `param`.
 */
export const sectionList = <A extends string>(
  param: string,
  given: ReadonlyArray<A>,
  allowed: ReadonlyArray<A>
): Effect.Effect<Array<A>, InvalidInput> => {
  const instead = `Send each of ${allowed.join(", ")} at most once, comma-separated (e.g. ${allowed.slice(0, 2).join(",")}).`
  if (given.length > allowed.length)
    return Effect.fail(invalid(param, `At most ${allowed.length} ${param} (got ${given.length}). ${instead}`))
  const repeated = given.find((item, i) => given.indexOf(item) !== i)
  if (repeated !== undefined)
    return Effect.fail(invalid(param, `"${repeated}" is listed more than once in ${param}. ${instead}`))
  return Effect.succeed([...given].sort())
}

/** An identifier cleaned against the configured hosts, or INVALID_INPUT naming `param`. */
export const cleaned = <A>(
  param: string,
  parse: (hosts: Hosts) => Parsed<A>
): Effect.Effect<A, InvalidInput> =>
  PlatformHosts.use((hosts) => {
    const parsed = parse(hosts)
    return parsed.ok ? Effect.succeed(parsed.value) : Effect.fail(invalid(param, parsed.message))
  })

/** One upstream call through the shared cache. */
export const fetchVia = <M extends Method>(freshness: Freshness, method: M, ...args: Args<M>) =>
  Effect.flatMap(Upstream, (upstream) =>
    Effect.flatMap(Cache, (cache) =>
      cache.through(`${method}:${canonicalJson(args)}`, freshness, upstream.call(method, ...args))
    )
  )

export const notFound = (message: string) => new NotFound({ message })

export const invalidCursor = invalid(
  "cursor",
  "This cursor does not belong to this query. Send the `cursor` from the previous page of the same call, or omit it."
)

/** The RunResult of one fetched value. */
export const served = <A>(
  fetched: { readonly value: unknown; readonly served: RunResult["served"]; readonly fetchedAt: number },
  data: A,
  refunds: RunResult["refunds"] = []
): RunResult => ({ data, refunds, served: fetched.served, fetchedAt: fetched.fetchedAt })

/**
 * A fetched page as an operation's data, `{ [field]: items, cursor }`. A cursor of another query is
 * INVALID_INPUT; a page whose owner does not exist (undefined) is NOT_FOUND with `missing`.
 */
export const pageResult = <A>(
  fetched: Fetched<Page<A> | InvalidCursor | undefined>,
  field: string,
  missing: string,
  refunds: RunResult["refunds"] = []
): Effect.Effect<RunResult, InvalidInput | NotFound> => {
  const page = fetched.value
  if (page === InvalidCursor) return Effect.fail(invalidCursor)
  if (page === undefined) return Effect.fail(notFound(missing))
  return Effect.succeed({
    data: { [field]: page.items, cursor: page.next_cursor },
    refunds,
    served: fetched.served,
    fetchedAt: fetched.fetchedAt
  })
}
