import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Row from "../store/rows.ts"
import { Speculating } from "./Cache.ts"

const decodeDomains = Row.decoder(Schema.Struct({ company_slug: Schema.String }), "resolved_domains")

/** Website domains already verified against a company's website; a later call with one is refunded the 4. */
export class Domains extends Context.Service<
  Domains,
  {
    readonly known: (domain: string) => Effect.Effect<string | undefined>
    readonly remember: (domain: string, companySlug: string) => Effect.Effect<void>
  }
>()("services/Domains") {
  static readonly layer = Layer.effect(
    Domains,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const known = Effect.fn("Domains.known")(function* (domain: string) {
        const rows = yield* sql`
          SELECT company_slug FROM resolved_domains WHERE domain = ${domain}`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeDomains)
        )
        return rows[0]?.company_slug
      })
      const remember = Effect.fn("Domains.remember")(function* (domain: string, companySlug: string) {
        const write = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql`INSERT INTO resolved_domains (domain, company_slug, resolved_at) VALUES (${domain}, ${companySlug}, ${now})
            ON CONFLICT (domain) DO NOTHING`.pipe(Effect.orDie)
        })
        // A speculative run remembers only if its call is charged (else a rerun would be refunded).
        const speculation = yield* Speculating
        if (speculation === undefined) return yield* write
        speculation.afterCharge.push(write)
      })
      return Domains.of({ known, remember })
    })
  )
}
