import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { openBrowser } from "./browser.ts"
import { updateConfig } from "./config.ts"
import { account, accountQuery } from "./flags.ts"
import { bold, dim } from "./output.ts"
import { Abandoned, session, withManagement } from "./session.ts"

const pollMs = () => Number(process.env.SVC_POLL_MS || 2000)

export const buy = Command.make(
  "buy",
  {
    pack: Argument.Literals("pack", ["flex", "production"] as const),
    rail: Flag.String("rail").pipe(
      Flag.withDescription("`local` or `stripe`; the service's first by default."),
      Flag.optional
    ),
    wait: Flag.Boolean("wait").pipe(
      Flag.withDescription("Wait until the checkout is paid (default)."),
      Flag.withDefault(true)
    )
  },
  ({ pack, rail, wait }) =>
    Effect.gen(function* () {
      const { client } = yield* session
      const started = yield* client.startCheckout({
        payload: { pack, ...(Option.isSome(rail) ? { rail: rail.value } : {}) }
      })
      yield* Console.log(started.checkout_url)
      yield* Console.error(
        dim(
          `${pack}: $${(started.price_usd_cents / 100).toFixed(2)} on ${started.rail}; pay at the URL above.`,
          process.stderr
        )
      )
      yield* openBrowser(started.checkout_url)
      if (!wait) return
      for (;;) {
        yield* Effect.sleep(pollMs())
        const status = yield* client.getCheckout({ params: { session_id: started.session_id } })
        if (status.status === "paid") {
          if (status.api_key !== undefined)
            yield* updateConfig((c) => ({
              ...c,
              key: status.api_key!,
              ...(status.account_id ? { account_id: status.account_id } : {})
            }))
          return yield* Console.error(
            bold(`Paid: ${pack} is active${status.api_key ? "; the new key is saved" : ""}.`, process.stderr)
          )
        }
        if (status.status === "expired")
          return yield* new Abandoned({ message: "The checkout expired unpaid.", auth: false })
      }
    })
).pipe(Command.withDescription("Buy a pack: prints (and opens) the checkout URL, then waits for payment."))

export const portal = Command.make("portal", { account }, ({ account }) =>
  Effect.gen(function* () {
    const { client, config } = yield* withManagement
    const answer = yield* client.billingPortal({ query: accountQuery(account, config) })
    yield* Console.log(answer.url)
    yield* openBrowser(answer.url)
  })
).pipe(
  Command.withDescription(
    "Print (and open) the billing portal link: purchases, plan, cancel (needs `svc login`)."
  )
)
