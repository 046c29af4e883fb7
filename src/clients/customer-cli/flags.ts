import { Console, Option } from "effect"
import { Flag } from "effect/cli"
import type { SvcConfig } from "./config.ts"
import { printJson } from "./output.ts"

export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the service's answer as JSON."),
  Flag.withoutNegation,
  Flag.withDefault(false)
)
export const show = (asJson: boolean, value: unknown, text: () => string) =>
  asJson ? printJson(value) : Console.log(text())

export const account = Flag.String("account").pipe(
  Flag.withDescription("The account (acct_...); default: the account of this CLI's key (`svc whoami`)."),
  Flag.optional
)
/**
 * The account a management command acts on: `--account`, else the CLI's own (its key's, as
 * `usage` and `whoami` show it), so every command speaks of the same account.
 */
export const accountQuery = (account: Option.Option<string>, config: SvcConfig) =>
  Option.isSome(account)
    ? { account_id: account.value }
    : config.account_id === undefined
      ? {}
      : { account_id: config.account_id }
