import { Effect } from "effect"
import * as microblog from "../../contract/operations/microblog.ts"
import { hosts, parseTweetId } from "../../domain/identifiers.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const getTweet = implement(microblog.getTweet, {
  prepare: (params, price) =>
    Effect.map(cleaned("id", parseTweetId(params.id)), (id) => ({ args: { id }, quote: price() })),
  run: ({ id }, context) =>
    Effect.gen(function* () {
      const fetched = yield* fetchVia(context.freshness, "getTweet", id)
      if (fetched.value === undefined)
        return yield* notFound(`No ${hosts.microblog} tweet with the id ${id}.`)
      return served(fetched, fetched.value)
    })
})
