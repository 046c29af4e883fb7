import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import * as PgClient from "../src/store/PgClient.ts"

export interface PgSession {
  readonly query: <A extends object = Record<string, unknown>>(
    text: string,
    params?: ReadonlyArray<unknown>
  ) => Promise<ReadonlyArray<A>>
  readonly close: () => Promise<void>
}

/** A small pool on `url` through the service's own PostgreSQL client. */
export const pgSession = (url: string): PgSession => {
  const runtime = ManagedRuntime.make(PgClient.layer(url))
  return {
    query: <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
      runtime.runPromise(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          return yield* sql.unsafe<A>(text, [...params])
        })
      ),
    close: () => runtime.dispose()
  }
}

/** `url` with its database name replaced. */
export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/** Creates `<prefix>_<ts>` on the server of `baseUrl`; `drop` removes it (and its connections). */
export const createBenchDatabase = async (baseUrl: string, stamp: string, prefix = "svc_bench") => {
  const name = `${prefix}_${stamp}`
  const admin = pgSession(baseUrl)
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.close()
  }
  return {
    name,
    url: withDatabase(baseUrl, name),
    drop: async () => {
      const session = pgSession(baseUrl)
      try {
        await session.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await session.close()
      }
    }
  }
}
