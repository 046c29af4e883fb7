import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { audit } from "./audit.ts"
import { buy, portal } from "./billing.ts"
import { baseUrlOf, configPath, readConfig, updateConfig } from "./config.ts"
import { json, show } from "./flags.ts"
import { alert, keys } from "./keys.ts"
import { login } from "./login.ts"
import { dim, human, printJson, table } from "./output.ts"
import { NotSignedIn, session, UsageError, withKey } from "./session.ts"
import { receiptsVerify } from "./verify.ts"
import { receiptsExport, topup, webhooks } from "./webhooks.ts"

const init = Command.make(
  "init",
  {
    force: Flag.Boolean("force").pipe(
      Flag.withDescription("Mint a new key even if one is configured."),
      Flag.withoutNegation,
      Flag.withDefault(false)
    )
  },
  ({ force }) =>
    Effect.gen(function* () {
      const { config, client, baseUrl } = yield* session
      if (config.key !== undefined && !force)
        return yield* Console.log(
          `A key is already configured in ${configPath()} (use --force for a new one).`
        )
      const minted = yield* client.mintKey()
      yield* updateConfig((c) => ({
        ...c,
        base_url: baseUrl,
        key: minted.key,
        key_hint: minted.key_hint,
        account_id: minted.account_id
      }))
      yield* Console.log(`Minted a free trial key for ${minted.account_id}; saved to ${configPath()}.`)
      yield* Console.log(`Try: svc profnet profile <slug-or-url>`)
    })
).pipe(Command.withDescription("Mint a free trial key and save it to the config file."))

const loginCommand = Command.make(
  "login",
  {
    device: Flag.Boolean("device").pipe(
      Flag.withDescription(
        "Use the device flow (a code to enter at /activate) even when a browser could open."
      ),
      Flag.withoutNegation,
      Flag.withDefault(false)
    )
  },
  ({ device }) => login(device)
).pipe(Command.withDescription("Sign in: by browser callback, else by a device code printed here."))

const logout = Command.make("logout", {}, () =>
  Effect.gen(function* () {
    const { config, client } = yield* session
    if (config.management_token !== undefined) yield* client.logout().pipe(Effect.catch(() => Effect.void)) // already revoked or expired: forget it anyway
    yield* updateConfig(({ management_token: _, token_id: __, email: ___, ...rest }) => rest)
    yield* Console.log("Signed out (the spend key, if any, stays configured).")
  })
).pipe(Command.withDescription("Revoke this sign-in's management token and forget it."))

const whoami = Command.make("whoami", { json }, ({ json: asJson }) =>
  Effect.gen(function* () {
    const { config, client, baseUrl } = yield* session
    if (config.key === undefined && config.management_token === undefined)
      return yield* new NotSignedIn({ message: "Nobody: run `svc init` or `svc login`." })
    const usage = config.key === undefined ? undefined : yield* client.getUsage()
    const account_id = usage?.account_id ?? config.account_id ?? null
    const signedIn = config.management_token !== undefined
    // The email is shown only beside an account it governs: one account, never two halves of two.
    const governs = signedIn && account_id !== null && (config.accounts ?? [account_id]).includes(account_id)
    const who = {
      service: baseUrl,
      account_id,
      plan: usage?.plan ?? null,
      key_hint: usage?.key_hint ?? null,
      email: governs ? (config.email ?? null) : null,
      signed_in: signedIn,
      ...(signedIn && !governs
        ? {
            note: `Signed in as ${config.email}, who does not govern ${account_id ?? "an account here"}; claim it at ${baseUrl}/claim${account_id === null ? "" : `?account=${account_id}`}.`
          }
        : {})
    }
    yield* show(asJson, who, () => human(who))
  })
).pipe(Command.withDescription("Show the service, account, plan and key this CLI uses."))

const usage = Command.make("usage", { json }, ({ json: asJson }) =>
  Effect.gen(function* () {
    const { client } = yield* withKey
    const answer = yield* client.getUsage()
    yield* show(asJson, answer, () => human(answer))
  })
).pipe(Command.withDescription("Plan, budget, balance and spend (free)."))

const receipts = Command.make(
  "receipts",
  {
    json,
    limit: Flag.Int("limit").pipe(Flag.withDescription("1 to 100 (default 20)."), Flag.optional),
    cursor: Flag.String("cursor").pipe(Flag.optional)
  },
  ({ json: asJson, limit, cursor }) =>
    Effect.gen(function* () {
      const { client } = yield* withKey
      const page = yield* client.listReceipts({
        query: {
          ...(Option.isSome(limit) ? { limit: limit.value } : {}),
          ...(Option.isSome(cursor) ? { cursor: cursor.value } : {})
        }
      })
      yield* show(asJson, page, () =>
        [
          table(page.receipts as unknown as Array<Record<string, unknown>>, 7),
          ...(page.cursor ? [dim(`more: svc receipts --cursor ${page.cursor}`)] : [])
        ].join("\n")
      )
    })
).pipe(
  Command.withDescription(
    "The account's receipts, newest first (free); `svc receipts export` writes a range as a file, `svc receipts verify` checks their signatures."
  ),
  Command.withSubcommands([receiptsExport, receiptsVerify])
)

const recover = Command.make("recover", { email: Argument.String("email") }, ({ email }) =>
  Effect.gen(function* () {
    const { client } = yield* session
    yield* client.recover({ payload: { email } })
    yield* Console.log(`If ${email} has claimed an account, a recovery link is on its way (1 hour).`)
  })
).pipe(Command.withDescription("Email a recovery link for an account claimed by EMAIL."))

const mcpClients = ["claude", "cursor", "vscode"] as const

const mcpConfig = Command.make(
  "mcp-config",
  {
    client: Argument.Literals("client", mcpClients).pipe(
      Argument.withDescription(`The MCP client: ${mcpClients.join(", ")}.`),
      Argument.optional
    )
  },
  ({ client: chosen }) =>
    Effect.gen(function* () {
      if (Option.isNone(chosen))
        return yield* new UsageError({
          message: `Name the MCP client: ${mcpClients.map((name) => `svc mcp-config ${name}`).join(", ")}.`
        })
      const client = chosen.value
      const config = yield* readConfig
      const key = process.env.SVC_KEY || config.key
      if (key === undefined) return yield* new NotSignedIn({ message: "No key yet: run `svc init` first." })
      const url = `${baseUrlOf(config)}/mcp`
      const header = { Authorization: `Bearer ${key}` }
      const setups = {
        claude: { mcpServers: { "svc-data": { type: "http", url, headers: header } } },
        cursor: { mcpServers: { "svc-data": { url, headers: header } } },
        vscode: { servers: { "svc-data": { type: "http", url, headers: header } } }
      }
      yield* printJson(setups[client])
      const where = { claude: ".mcp.json", cursor: "~/.cursor/mcp.json", vscode: ".vscode/mcp.json" }[client]
      yield* Console.error(dim(`Put this in ${where}; it contains your key.`, process.stderr))
    })
).pipe(
  Command.withDescription(
    `Print the MCP client setup for this key: ${mcpClients.join(", ")} (e.g. svc mcp-config claude).`
  )
)

export const accountCommands = [
  init,
  loginCommand,
  logout,
  whoami,
  usage,
  receipts,
  keys,
  alert,
  webhooks,
  topup,
  audit,
  buy,
  portal,
  recover,
  mcpConfig
] as const
