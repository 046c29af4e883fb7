import { Command } from "effect/cli"
import { accountCommands } from "./account.ts"
import { platformCommands } from "./data.ts"

/** `svc`: the account commands, then one command per platform with its data operations. */
export const svc = Command.make("svc").pipe(
  Command.withDescription("The svc data API from a shell: sign in once, then call any operation."),
  Command.withSubcommands([...accountCommands, ...platformCommands])
)
