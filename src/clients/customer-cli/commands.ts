import { Command, Flag, GlobalFlag } from "effect/cli"
import { cli as operatorCli } from "../operator-cli/commands.ts"
import { accountCommands } from "./account.ts"
import { defaultBaseUrl } from "./config.ts"
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

/**
 * `--base-url URL`: the service this run talks to, for every command. The parser takes it here so
 * that help lists it; `main.ts` reads it into SVC_BASE_URL before anything runs, so the account
 * commands, the SDK and `admin` all see one setting.
 */
export const baseUrlFlag = GlobalFlag.Setting("base-url")({
  flag: Flag.String("base-url").pipe(
    Flag.withDescription(`The service's address for this run (as SVC_BASE_URL; default ${defaultBaseUrl}).`),
    Flag.optional
  )
})

/** `--base-url URL` or `--base-url=URL` among the arguments, the last one winning. */
export const baseUrlArgument = (argv: ReadonlyArray<string>): string | undefined => {
  let found: string | undefined
  argv.forEach((arg, i) => {
    if (arg === "--base-url" && argv[i + 1] !== undefined) found = argv[i + 1]
    else if (arg.startsWith("--base-url=")) found = arg.slice("--base-url=".length)
  })
  return found
}

/** What `svc --help` says beyond the commands: where settings come from, and what the exit codes mean. */
const reference = `The svc data API from a shell: sign in once, then call any operation.

Environment:
  SVC_BASE_URL      the service's address (default ${defaultBaseUrl}); --base-url does the same for one run
  SVC_KEY           a spend key to use instead of the config file's
  SVC_ADMIN_TOKEN   the operator's token, for \`svc admin\`
  SVC_X402_PRIVATE_KEY  the payer's private key for \`svc buy --rail x402\` (or --key-file)
  SVC_NO_BROWSER=1  never open a browser (print the link instead)
  NO_COLOR          no colour

Config file: $XDG_CONFIG_HOME/svc/config.json (else ~/.config/svc/config.json), mode 0600:
  the key (\`svc init\`), the sign-in (\`svc login\`) and the service's address.

Exit codes: 0 done · 1 other failure (the service unreachable among them) · 2 usage error or
  invalid input · 3 payment needed (trial cap, credits, budget, max credits) · 4 no key or sign-in.`

/** `svc`: the account commands, one command per platform with its data operations, and `admin`. */
export const svc = Command.make("svc").pipe(
  Command.withDescription(reference),
  Command.withSubcommands([...accountCommands, ...platformCommands, ...admin]),
  Command.withGlobalFlags([baseUrlFlag])
)
