import { Console, Effect, Option, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { webhookEventTypes } from "../../domain/webhooks.ts"
import { account, accountQuery, json, show } from "./flags.ts"
import { bold, dim, human, table } from "./output.ts"
import { UsageError, withKey, withManagement } from "./session.ts"

const webhookId = Argument.String("webhook-id").pipe(
  Argument.withDescription("A webhook id from `svc webhooks list` (wh_...).")
)
const subscribable = webhookEventTypes.filter((type) => type !== "ping")

/** `svc webhooks ...`: the account's webhook endpoints (needs `svc login`). */
export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks: signed POSTs of the account's events to your URL (needs `svc login`)."),
  Command.withSubcommands([
    Command.make("list", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const listed = yield* client.listWebhooks({ query: accountQuery(account, config) })
        yield* show(asJson, listed, () =>
          table(listed.webhooks as unknown as Array<Record<string, unknown>>, 5)
        )
      })
    ).pipe(Command.withDescription("List the webhooks (never their secrets).")),
    Command.make(
      "create",
      {
        json,
        account,
        url: Argument.String("url").pipe(Argument.withDescription("https://, on a public address.")),
        events: Flag.String("event").pipe(
          Flag.withDescription(`An event to send (repeat it): ${subscribable.join(", ")}; or "all".`),
          Flag.atLeast(1)
        )
      },
      ({ json: asJson, account, url, events }) =>
        Effect.gen(function* () {
          const { client, config } = yield* withManagement
          const named = events.includes("all") ? subscribable : events
          const created = yield* client.createWebhook({
            query: accountQuery(account, config),
            payload: { url, events: named }
          })
          yield* show(
            asJson,
            created,
            () =>
              `${created.secret}\n${dim(`${created.webhook_id} for ${created.events.join(", ")}: the signing secret is shown once; verify each delivery with it (Standard Webhooks).`)}`
          )
        })
    ).pipe(Command.withDescription("Add a webhook; its signing secret is printed once.")),
    Command.make("delete", { json, account, webhookId }, ({ json: asJson, account, webhookId }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const deleted = yield* client.deleteWebhook({
          query: accountQuery(account, config),
          payload: { webhook_id: webhookId }
        })
        yield* show(asJson, deleted, () => `Deleted ${deleted.webhook_id}; nothing more is sent to it.`)
      })
    ).pipe(Command.withDescription("Delete a webhook.")),
    Command.make("test", { json, account, webhookId }, ({ json: asJson, account, webhookId }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const tested = yield* client.testWebhook({
          query: accountQuery(account, config),
          payload: { webhook_id: webhookId }
        })
        yield* show(
          asJson,
          tested,
          () => `A ping (${tested.event_id}) is on its way; see: svc webhooks deliveries ${tested.webhook_id}`
        )
      })
    ).pipe(Command.withDescription("Send a ping (a disabled webhook is enabled again by its test).")),
    Command.make(
      "deliveries",
      {
        json,
        account,
        webhookId,
        limit: Flag.Int("limit").pipe(Flag.withDescription("1 to 100 (default 50)."), Flag.optional)
      },
      ({ json: asJson, account, webhookId, limit }) =>
        Effect.gen(function* () {
          const { client, config } = yield* withManagement
          const found = yield* client.listWebhookDeliveries({
            params: { webhook_id: webhookId },
            query: {
              ...accountQuery(account, config),
              ...(Option.isSome(limit) ? { limit: limit.value } : {})
            }
          })
          yield* show(asJson, found, () =>
            [
              bold("attempts"),
              table(
                found.attempts.map((attempt) => ({
                  attempted_at: attempt.attempted_at,
                  type: attempt.type,
                  event_id: attempt.event_id,
                  attempt: attempt.attempt,
                  status: attempt.status,
                  code: attempt.response_code,
                  error: attempt.error
                })),
                7
              ),
              bold("waiting"),
              table(found.pending as unknown as Array<Record<string, unknown>>, 4)
            ].join("\n")
          )
        })
    ).pipe(Command.withDescription("A webhook's delivery attempts, newest first, and what waits to be sent."))
  ])
)

/** `svc topup`: automatic top-up (needs `svc login`). */
export const topup = Command.make("topup").pipe(
  Command.withDescription(
    "Automatic top-up: buy a pack when the credits fall below a line (needs `svc login`)."
  ),
  Command.withSubcommands([
    Command.make("show", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const view = yield* client.getTopup({ query: accountQuery(account, config) })
        yield* show(asJson, view, () => human(view))
      })
    ).pipe(Command.withDescription("Whether it is on, its line and monthly maximum, this month's spend.")),
    Command.make(
      "on",
      {
        json,
        account,
        below: Flag.Int("below").pipe(
          Flag.withDescription("Top up when a call leaves fewer credits than this.")
        ),
        monthlyMax: Flag.Int("monthly-max-usd").pipe(
          Flag.withDescription("The most automatic top-ups may cost in a UTC month, in whole dollars.")
        ),
        pack: Flag.String("pack").pipe(
          Flag.withDescription("A one-time pack (flex, the default)."),
          Flag.optional
        )
      },
      ({ json: asJson, account, below, monthlyMax, pack }) =>
        Effect.gen(function* () {
          if (below < 1) return yield* new UsageError({ message: "--below is 1 credit or more." })
          if (monthlyMax < 1)
            return yield* new UsageError({ message: "--monthly-max-usd is 1 dollar or more." })
          const { client, config } = yield* withManagement
          const view = yield* client.setTopup({
            query: accountQuery(account, config),
            payload: {
              below_credits: below,
              monthly_max_usd_cents: monthlyMax * 100,
              ...(Option.isSome(pack) ? { pack: pack.value } : {})
            }
          })
          yield* show(
            asJson,
            view,
            () =>
              `Automatic top-up is on: below ${view.below_credits} credits, one ${view.pack} pack, at most $${((view.monthly_max_usd_cents ?? 0) / 100).toFixed(2)} a month.`
          )
        })
    ).pipe(Command.withDescription("Turn automatic top-up on (or change it).")),
    Command.make("off", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const view = yield* client.setTopup({
          query: accountQuery(account, config),
          payload: { enabled: false }
        })
        yield* show(asJson, view, () => "Automatic top-up is off.")
      })
    ).pipe(Command.withDescription("Turn automatic top-up off."))
  ])
)

const day = (name: string) =>
  Flag.String(name).pipe(Flag.withDescription("A UTC day, YYYY-MM-DD (both ends included)."))

/** `svc receipts export`: every receipt of a range, streamed to stdout as it arrives. */
export const receiptsExport = Command.make(
  "export",
  {
    account,
    from: day("from"),
    to: day("to"),
    format: Flag.Literals("format", ["csv", "jsonl"] as const).pipe(Flag.withDefault("csv" as const))
  },
  ({ account, from, to, format }) =>
    Effect.gen(function* () {
      const { client, config } = yield* withKey
      const body = yield* client.exportReceipts({
        query: { from, to, format, ...accountQuery(account, config) }
      })
      yield* Stream.runForEach(body, (chunk) =>
        Effect.callback<void>((resume) => {
          if (process.stdout.write(chunk)) resume(Effect.void)
          else process.stdout.once("drain", () => resume(Effect.void))
        })
      )
      yield* Console.error(dim(`Receipts ${from} to ${to} exported as ${format}.`, process.stderr))
    })
).pipe(
  Command.withDescription(
    "Every receipt from --from to --to (at most 366 days), as CSV or JSON Lines, on stdout."
  )
)
