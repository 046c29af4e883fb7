import { PlatformHosts } from "../../config.ts"
import * as microblog from "../../contract/operations/microblog.ts"
import { parseMicroblogAccount } from "../../domain/identifiers/index.ts"
import { implement } from "../Operation.ts"
import { cleaned, fetchVia, notFound, served } from "../support.ts"

export const getMicroblogProfile = implement(microblog.getMicroblogProfile, {
  *prepare(params, price) {
    const account = yield* cleaned("identifier", (hosts) => parseMicroblogAccount(params.identifier, hosts))
    return { args: account, quote: price() }
  },
  *run(account, context) {
    const hosts = yield* PlatformHosts
    const fetched = yield* fetchVia(context.freshness, "getMicroblogProfile", account)
    if (fetched.value === undefined) {
      return yield* notFound(`No ${hosts.microblog} account with this handle or id.`)
    }
    return served(fetched, fetched.value)
  }
})
