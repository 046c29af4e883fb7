import { readFileSync } from "node:fs"
import { createInterface } from "node:readline"
import { Console, Effect, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { makeSvcClient } from "../sdk/SvcClient.ts"
import { paymentRequiredOf } from "../sdk/x402Payer.ts"
import { bold } from "./output.ts"
import { Abandoned, type Session, UsageError } from "./session.ts"

/** Where `svc buy --rail x402` reads the payer's private key when `--key-file` is not given. */
export const privateKeyVariable = "SVC_X402_PRIVATE_KEY"

const privateKeyPattern = /^0x[0-9a-fA-F]{64}$/

/**
 * The payer's private key: from `--key-file` (a file holding it), else SVC_X402_PRIVATE_KEY. Never
 * an argument (it would sit in the shell's history and the process list), and never printed: an
 * error names where the key was read from, not what was read.
 */
const privateKeyOf = (keyFile: Option.Option<string>) =>
  Effect.gen(function* () {
    const [source, text] = Option.isSome(keyFile)
      ? [
          keyFile.value,
          yield* Effect.try({
            try: () => readFileSync(keyFile.value, "utf8"),
            catch: () => new UsageError({ message: `Cannot read the key file ${keyFile.value}.` })
          })
        ]
      : [privateKeyVariable, process.env[privateKeyVariable]]
    if (text === undefined || text.trim() === "")
      return yield* new UsageError({
        message: `x402 needs the payer's private key: --key-file FILE, or ${privateKeyVariable} in the environment.`
      })
    const key = text.trim()
    if (!privateKeyPattern.test(key))
      return yield* new UsageError({
        message: `${source} does not hold a private key (0x and 64 hex digits).`
      })
    return key as `0x${string}`
  })

/** One line from stdin (the prompt on stderr); empty at the end of input. */
const askLine = (prompt: string) =>
  Effect.callback<string>((resume) => {
    const lines = createInterface({ input: process.stdin, terminal: false })
    let answered = false
    const answer = (text: string) => {
      if (answered) return
      answered = true
      lines.close()
      resume(Effect.succeed(text))
    }
    process.stderr.write(prompt)
    lines.once("line", answer)
    lines.once("close", () => answer(""))
  })

/**
 * `svc buy --rail x402 --credits N`: shows what the service asks for N credits (its 402's
 * `PAYMENT-REQUIRED`), asks for confirmation unless `--yes`, then pays with the SDK's x402 payer,
 * bound to exactly that price, and prints the purchase.
 */
export const buyWithX402 = (
  { config, baseUrl, client }: Session,
  input: { readonly credits: number; readonly keyFile: Option.Option<string>; readonly yes: boolean }
) =>
  Effect.gen(function* () {
    const privateKey = yield* privateKeyOf(input.keyFile)
    const { privateKeyToAccount } = yield* Effect.promise(() => import("viem/accounts"))
    const account = privateKeyToAccount(privateKey)

    const quote = yield* client
      .buyCreditsX402({ payload: { credits: input.credits }, headers: {} })
      .pipe(Effect.flip)
    const accepted = paymentRequiredOf(quote)?.accepts.find((accept) => accept.scheme === "exact")
    if (accepted === undefined) return yield* Effect.fail(quote)
    const name = typeof accepted.extra.name === "string" ? `${accepted.extra.name} ` : ""
    yield* Console.error(
      [
        `${input.credits} credits cost ${accepted.amount} token units of ${name}(${accepted.asset}) on ${accepted.network},`,
        `paid to ${accepted.payTo} by ${account.address}.`
      ].join("\n")
    )
    if (!input.yes) {
      const answer = yield* askLine("Pay? [y/N] ")
      if (!/^y(es)?$/i.test(answer.trim()))
        return yield* new Abandoned({ message: "Not bought: nothing was paid.", auth: false })
    }

    const paying = yield* makeSvcClient({
      baseUrl,
      key: config.key,
      managementToken: config.management_token,
      // Bound to the price just shown: a dearer payment is refused before it is signed.
      x402: { account, maxCredits: input.credits, spendLimit: BigInt(accepted.amount) }
    }).pipe(Effect.provide(FetchHttpClient.layer))
    const purchase = yield* paying.buyCredits(input.credits)
    yield* Console.log(
      `${bold(`Bought ${purchase.credits_added} credits`)}: the balance is ${purchase.balance_credits} credits (plan ${purchase.plan}).`
    )
    yield* Console.log(`transaction ${purchase.transaction}`)
  })
