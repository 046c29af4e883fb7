import { Command } from "effect/cli"
import { cli as operatorCli } from "../operator-cli/commands.ts"
import { accountCommands } from "./account.ts"
import { platformCommands } from "./data.ts"

type Operator =
  typeof operatorCli extends Command.Command<string, infer _I, infer _C, infer E, infer R>
    ? Command.Command<"admin", unknown, {}, E, R>
    : never

/**
 * The operator's `admin` commands (src/clients/operator-cli), as they are: `svc admin ...`. Its only
 * subcommand is `admin`; the cast restores the error and service types `subcommands` widens.
 */
const admin = operatorCli.subcommands
  .flatMap((group) => group.commands)
  .filter((command) => command.name === "admin") as unknown as ReadonlyArray<Operator>

/** `svc`: the account commands, one command per platform with its data operations, and `admin`. */
export const svc = Command.make("svc").pipe(
  Command.withDescription("The svc data API from a shell: sign in once, then call any operation."),
  Command.withSubcommands([...accountCommands, ...platformCommands, ...admin])
)
