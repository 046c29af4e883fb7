import { Data, Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { makeSvcClient, type SvcClientShape } from "../sdk/SvcClient.ts"
import { baseUrlOf, readConfig, type SvcConfig } from "./config.ts"

/** A flag combination or value the parser took but the command cannot use (exit 2). */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Nothing to authenticate with: no key, or no sign-in (exit 4). */
export class NotSignedIn extends Data.TaggedError("NotSignedIn")<{ readonly message: string }> {}

/** A sign-in or checkout that ended without success (exit 4 for sign-in, 1 otherwise). */
export class Abandoned extends Data.TaggedError("Abandoned")<{
  readonly message: string
  readonly auth: boolean
}> {}

export interface Session {
  readonly config: SvcConfig
  readonly baseUrl: string
  readonly client: SvcClientShape
}

/** The config (SVC_KEY and SVC_BASE_URL win over it) and a client with its credentials. */
export const session = Effect.gen(function* () {
  const stored = yield* readConfig
  const config: SvcConfig = process.env.SVC_KEY ? { ...stored, key: process.env.SVC_KEY } : stored
  const baseUrl = baseUrlOf(config)
  const client = yield* makeSvcClient({
    baseUrl,
    key: config.key,
    managementToken: config.management_token
  }).pipe(Effect.provide(FetchHttpClient.layer))
  return { config, baseUrl, client } satisfies Session
})

export const withKey = Effect.flatMap(session, (s) =>
  s.config.key === undefined && s.config.management_token === undefined
    ? Effect.fail(
        new NotSignedIn({ message: "No key yet: run `svc init` (a free trial key) or `svc login`." })
      )
    : Effect.succeed(s)
)

export const withManagement = Effect.flatMap(session, (s) =>
  s.config.management_token === undefined
    ? Effect.fail(new NotSignedIn({ message: "This needs a sign-in: run `svc login`." }))
    : Effect.succeed(s)
)
