import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { openBrowser } from "./browser.ts"
import { updateConfig } from "./config.ts"
import { account, accountQuery } from "./flags.ts"
import { bold, dim } from "./output.ts"
import { Abandoned, session, UsageError, withManagement } from "./session.ts"
import { buyWithX402, privateKeyVariable } from "./x402Buy.ts"

const pollMs = () => Number(process.env.SVC_POLL_MS || 2000)

export const buy = Command.make(
  "buy",
  {
    pack: Argument.Literals("pack", ["flex", "production"] as const).pipe(Argument.optional),
    rail: Flag.String("rail").pipe(
      Flag.withDescription("`local`, `stripe` or `x402`; the service's first by default."),
      Flag.optional
    ),
    wait: Flag.Boolean("wait").pipe(
      Flag.withDescription("Wait until the checkout is paid (default)."),
      Flag.withDefault(true)
    ),
    credits: Flag.Int("credits").pipe(
      Flag.withDescription("With --rail x402: the credits to buy (the service's minimum, 500 by default)."),
      Flag.optional
    ),
    keyFile: Flag.String("key-file").pipe(
      Flag.withDescription(
        `With --rail x402: a file holding the payer's private key (else ${privateKeyVariable}); never printed.`
      ),
      Flag.optional
    ),
    yes: Flag.Boolean("yes").pipe(
      Flag.withDescription("With --rail x402: pay without asking for confirmation."),
      Flag.withoutNegation,
      Flag.withDefault(false)
    )
  },
  ({ pack, rail, wait, credits, keyFile, yes }) =>
    Effect.gen(function* () {
      const x402 = Option.isSome(rail) && rail.value === "x402"
      if (x402 !== Option.isNone(pack) || x402 !== Option.isSome(credits))
        return yield* new UsageError({
          message: "Buy a pack (`svc buy flex`), or credits with x402 (`svc buy --rail x402 --credits 500`)."
        })
      if (x402)
        return yield* buyWithX402(yield* session, { credits: Option.getOrThrow(credits), keyFile, yes })
      const { client } = yield* session
      const started = yield* client.startCheckout({
        payload: { pack: Option.getOrThrow(pack), ...(Option.isSome(rail) ? { rail: rail.value } : {}) }
      })
      yield* Console.log(started.checkout_url)
      yield* Console.error(
        dim(
          `${started.pack}: $${(started.price_usd_cents / 100).toFixed(2)} on ${started.rail}; pay at the URL above.`,
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
            bold(
              `Paid: ${started.pack} is active${status.api_key ? "; the new key is saved" : ""}.`,
              process.stderr
            )
          )
        }
        if (status.status === "expired")
          return yield* new Abandoned({ message: "The checkout expired unpaid.", auth: false })
      }
    })
).pipe(
  Command.withDescription(
    "Buy a pack: prints (and opens) the checkout URL, then waits for payment. With `--rail x402 --credits N`: shows the price, asks, pays with the key of --key-file or SVC_X402_PRIVATE_KEY."
  )
)

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
