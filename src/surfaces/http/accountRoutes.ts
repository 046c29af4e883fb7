import { Clock, Effect, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig, links } from "../../config.ts"
import { BaseApi, Caller, ClientIp, ServedApi } from "../../contract/api.ts"
import { controlCharacterInput } from "../../contract/controlCharacters.ts"
import { ReceiptSchema } from "../../contract/envelope.ts"
import { InvalidInput, NotFound } from "../../contract/errors.ts"
import { upgradeUrl } from "../../contract/problem.ts"
import type { Usage as UsageBody } from "../../contract/schemas.ts"
import { freeTier, freeTierSentence } from "../../domain/plans.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import { ReceiptSigner } from "../../metering/ReceiptSigner.ts"
import { Receipts } from "../../metering/Receipts.ts"
import { Accounts } from "../../services/Accounts.ts"
import { Usage } from "../../services/Usage.ts"
import { announcedBodyTooLarge } from "../common/limits.ts"
import { Problems } from "../common/problems.ts"
import { receiptKeyOf } from "../common/receiptScope.ts"
import { usageReport } from "../usageReport.ts"

import { callerOf, noStore } from "./middleware.ts"
import { parseQuery } from "./queryString.ts"

export const KeysRoutes = HttpApiBuilder.group(BaseApi, "keys", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const accounts = yield* Accounts
    const problems = yield* Problems
    const link = links(config.baseUrl)
    return handlers.handle("mintKey", () =>
      Effect.gen(function* () {
        const ip = yield* ClientIp
        const result = yield* Effect.result(
          accounts.mintTrial(ip).pipe(Effect.catchTag("SqlError", Effect.die))
        )
        if (result._tag === "Failure") return problems.render(result.failure)
        const minted = result.success
        return {
          key: minted.secret,
          key_hint: minted.key.hint,
          account_id: minted.account.id,
          plan: "trial" as const,
          free_tier: {
            credits_per_ip_day: config.policy.freeCreditsPerIpDay,
            freshness: freeTier.freshness,
            first_page_only: freeTier.firstPageOnly
          },
          upgrade_url: upgradeUrl(config.upgradeUrl, minted.account.id),
          setup: {
            env: `export SVC_KEY=${minted.secret}`,
            rest: `curl -s -H "Authorization: Bearer ${minted.secret}" ${config.baseUrl}/v1/usage`,
            mcp: { url: link.mcp, headers: { Authorization: `Bearer ${minted.secret}` } }
          },
          note: `This key is shown once; store it now. ${freeTierSentence(config.policy.freeCreditsPerIpDay)} Buy a pack at upgrade_url to lift the caps on this same key.`,
          docs: link.docs
        }
      })
    )
  })
)

export const UsageRoutes = HttpApiBuilder.group(ServedApi, "usage", (handlers) =>
  Effect.gen(function* () {
    const receipts = yield* Receipts
    const signer = yield* ReceiptSigner
    const problems = yield* Problems
    // Signed as the contract serves it (its schema's members), so the signature covers what is sent.
    const served = Schema.encodeSync(ReceiptSchema)
    return handlers
      .handle("listReceipts", ({ query }) =>
        Effect.gen(function* () {
          const { account, key } = yield* Caller
          const keyId = receiptKeyOf(key, query.key_id)
          if (keyId === null) return { receipts: [], cursor: null }
          const before = query.cursor === undefined ? undefined : decodeReceiptCursor(query.cursor)
          if (before === null) {
            return problems.render(
              new InvalidInput({
                message:
                  "This cursor is not one this service issued; send the `cursor` of the previous page.",
                param: "cursor"
              })
            )
          }
          const limit = query.limit ?? 20
          const rows = yield* Effect.orDie(receipts.list(account.id, { limit: limit + 1, before, keyId }))
          const page = rows.slice(0, limit)
          const last = page[page.length - 1]
          return {
            receipts: yield* signer.signAll(page.map(({ createdAtMs: _, ...receipt }) => served(receipt))),
            cursor:
              rows.length > limit && last !== undefined
                ? encodeReceiptCursor(last.createdAtMs, last.id)
                : null
          }
        })
      )
      .handle("getReceipt", ({ params }) =>
        Effect.gen(function* () {
          const { account, key } = yield* Caller
          const receipt = yield* Effect.orDie(
            receipts.get(account.id, params.id, { keyId: receiptKeyOf(key) ?? undefined })
          )
          if (receipt === undefined)
            return problems.render(new NotFound({ message: `No receipt ${params.id} on this account.` }))
          return yield* signer.sign(served(receipt))
        })
      )
  })
)

/**
 * `GET /v1/usage` (the contract's `get_usage`), the route an agent polls: a wire adapter on
 * the router, as the data routes are, doing what the HttpApi's middlewares do for the usage group
 * in their order (`Client`: a body announced too large, the client IP, no-store; `SpendKeyAuth`:
 * the bearer; `PlainInput`: no control characters in the query). The answer is the contract's
 * schema's type, and its encoded form is the same (no field is transformed), which the compiler
 * checks: it is written as it is built, not walked by Schema's encoder on every request. Served by
 * the HttpApi, every request paid a copy of the service's context into a new Map (see `ServedApi`).
 */
export const UsageRead = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const usage = yield* Usage
    const problems = yield* Problems
    const bearers = yield* Bearers
    // hot path
    const answer = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const tooLarge = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
      if (tooLarge !== undefined) return Effect.succeed(problems.render(tooLarge))
      const ip = bearers.clientIp(request)
      return Effect.map(
        Effect.flatMap(
          Effect.result(callerOf(bearers, bearerCredential(request.headers.authorization) ?? "", ip)),
          (caller) => {
            if (caller._tag === "Failure") return Effect.succeed(problems.render(caller.failure))
            const at = request.url.indexOf("?")
            const refused =
              at === -1 ? undefined : controlCharacterInput(parseQuery(request.url.slice(at + 1)))
            if (refused !== undefined) return Effect.succeed(problems.render(refused))
            return Effect.flatMap(
              Effect.orDie(usage.facts(caller.success.account.id, caller.success.key.id, ip)),
              (facts) =>
                Effect.map(Clock.currentTimeMillis, (now) => {
                  const body: typeof UsageBody.Encoded = usageReport(caller.success, facts, now, config)
                  return HttpServerResponse.text(JSON.stringify(body), { contentType: "application/json" })
                })
            )
          }
        ),
        noStore
      )
    })
    yield* router.add("GET", "/v1/usage", answer)
  })
)

const encodeReceiptCursor = (createdAt: number, id: string) =>
  Buffer.from(`${createdAt}.${id}`).toString("base64url")

/** `null` for a cursor this service did not issue. */
const decodeReceiptCursor = (cursor: string): { readonly createdAt: number; readonly id: string } | null => {
  const match = /^(\d+)\.(rcpt_[0-9A-Za-z]+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match === null ? null : { createdAt: Number(match[1]), id: match[2]! }
}
