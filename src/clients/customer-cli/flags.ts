import { Console, Option } from "effect"
import { Flag } from "effect/cli"
import { printJson } from "./output.ts"

export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the service's answer as JSON."),
  Flag.withoutNegation,
  Flag.withDefault(false)
)
export const show = (asJson: boolean, value: unknown, text: () => string) =>
  asJson ? printJson(value) : Console.log(text())

export const account = Flag.String("account").pipe(
  Flag.withDescription("The account (acct_...), when the signed-in email governs several."),
  Flag.optional
)
export const accountQuery = (account: Option.Option<string>) =>
  Option.isSome(account) ? { account_id: account.value } : {}
