import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { account, accountQuery, json, show } from "./flags.ts"
import { dim, table } from "./output.ts"
import { withManagement } from "./session.ts"

/** `svc audit`: who changed what on the account, newest first (needs `svc login`). */
export const audit = Command.make(
  "audit",
  {
    json,
    account,
    limit: Flag.Int("limit").pipe(Flag.withDescription("1 to 100 (default 50)."), Flag.optional),
    cursor: Flag.String("cursor").pipe(
      Flag.withDescription("Older events: the cursor the previous page printed."),
      Flag.optional
    )
  },
  ({ json: asJson, account, limit, cursor }) =>
    Effect.gen(function* () {
      const { client, config } = yield* withManagement
      const page = yield* client.listAuditEvents({
        query: {
          ...accountQuery(account, config),
          ...(Option.isSome(limit) ? { limit: limit.value } : {}),
          ...(Option.isSome(cursor) ? { cursor: cursor.value } : {})
        }
      })
      yield* show(asJson, page, () =>
        [
          table(
            page.events.map((event) => ({
              at: event.at,
              action: event.action,
              by: `${event.actor.kind} ${event.actor.id}`,
              target: event.target,
              ip: event.ip
            }))
          ),
          ...(page.next_cursor === null ? [] : [dim(`Older: svc audit --cursor ${page.next_cursor}`)])
        ].join("\n")
      )
    })
).pipe(
  Command.withDescription(
    "The audit log: sign-ins, keys, apps, webhooks, purchases and the operator's changes, newest first."
  )
)
