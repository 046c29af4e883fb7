import { generateKeyPairSync, randomBytes } from "node:crypto"
import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Row from "../store/rows.ts"

/**
 * The authorization server's ES256 signing key and cookie keys: made once by whichever instance
 * starts first and stored in the database, so every instance signs, and reads cookies, the same.
 */

const KeyRow = Schema.Struct({ name: Schema.String, value: Schema.String })
const decodeKeys = Row.decoder(KeyRow, "oauth_keys")

const freshSigningKey = () => {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
  const jwk = privateKey.export({ format: "jwk" })
  return JSON.stringify({ ...jwk, alg: "ES256", use: "sig", kid: randomBytes(8).toString("hex") })
}

export interface ServerKeys {
  readonly signingKey: Record<string, unknown>
  readonly cookieKeys: ReadonlyArray<string>
}

export const loadServerKeys = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  // Both inserts lose quietly to an instance that got there first; everyone reads the winner's.
  yield* sql`INSERT INTO oauth_keys (name, value, created_at) VALUES ('signing', ${freshSigningKey()}, ${now})
    ON CONFLICT (name) DO NOTHING`
  yield* sql`INSERT INTO oauth_keys (name, value, created_at)
    VALUES ('cookie', ${randomBytes(32).toString("base64url")}, ${now}) ON CONFLICT (name) DO NOTHING`
  const rows = yield* sql`SELECT name, value FROM oauth_keys`.pipe(Effect.flatMap(decodeKeys))
  const value = (name: string) =>
    rows.find((row) => row.name === name)?.value ?? Effect.runSync(Effect.die(`oauth_keys: no ${name} key`))
  return {
    signingKey: JSON.parse(value("signing")) as Record<string, unknown>,
    cookieKeys: [value("cookie")]
  } satisfies ServerKeys
})
