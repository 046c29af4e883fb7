import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { openBrowser } from "./browser.ts"
import { baseUrlOf, configPath, readConfig, updateConfig } from "./config.ts"
import { login } from "./login.ts"
import { bold, dim, human, printJson, table } from "./output.ts"
import { Abandoned, NotSignedIn, session, UsageError, withKey, withManagement } from "./session.ts"

const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the service's answer as JSON."),
  Flag.withoutNegation,
  Flag.withDefault(false)
)
const show = (asJson: boolean, value: unknown, text: () => string) =>
  asJson ? printJson(value) : Console.log(text())

const pollMs = () => Number(process.env.SVC_POLL_MS || 2000)

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
    const usage = config.key === undefined ? undefined : yield* client.get_usage()
    const who = {
      service: baseUrl,
      email: config.email ?? null,
      account_id: usage?.account_id ?? config.account_id ?? null,
      plan: usage?.plan ?? null,
      key_hint: usage?.key_hint ?? null,
      signed_in: config.management_token !== undefined
    }
    yield* show(asJson, who, () => human(who))
  })
).pipe(Command.withDescription("Show the service, account, plan and key this CLI uses."))

const usage = Command.make("usage", { json }, ({ json: asJson }) =>
  Effect.gen(function* () {
    const { client } = yield* withKey
    const answer = yield* client.get_usage()
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
).pipe(Command.withDescription("The account's receipts, newest first (free)."))

const account = Flag.String("account").pipe(
  Flag.withDescription("The account (acct_...), when the signed-in email governs several."),
  Flag.optional
)
const accountQuery = (account: Option.Option<string>) =>
  Option.isSome(account) ? { account_id: account.value } : {}

const keyId = Argument.String("key-id").pipe(Argument.withDescription("A key id from `svc keys list`."))

const keys = Command.make("keys").pipe(
  Command.withDescription("The account's spend keys (needs `svc login`)."),
  Command.withSubcommands([
    Command.make("list", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client } = yield* withManagement
        const listed = yield* client.listKeys({ query: accountQuery(account) })
        yield* show(asJson, listed, () => table(listed.keys as unknown as Array<Record<string, unknown>>))
      })
    ).pipe(Command.withDescription("List the keys (never their secrets).")),
    Command.make(
      "create",
      {
        json,
        account,
        label: Flag.String("label").pipe(Flag.optional),
        use: Flag.Boolean("use").pipe(
          Flag.withDescription("Also make it this CLI's key."),
          Flag.withoutNegation,
          Flag.withDefault(false)
        )
      },
      ({ json: asJson, account, label, use }) =>
        Effect.gen(function* () {
          const { client } = yield* withManagement
          const created = yield* client.createKey({
            query: accountQuery(account),
            payload: Option.isSome(label) ? { label: label.value } : {}
          })
          if (use) yield* updateConfig((c) => ({ ...c, key: created.key, key_hint: created.hint }))
          yield* show(
            asJson,
            created,
            () => `${created.key}\n${dim(`${created.key_id}: shown once; keep it safe.`)}`
          )
        })
    ).pipe(Command.withDescription("Create a key; its secret is printed once.")),
    Command.make("rotate", { json, account, keyId }, ({ json: asJson, account, keyId }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const listed = yield* client.listKeys({ query: accountQuery(account) })
        const wasOurs = listed.keys.some((k) => k.key_id === keyId && k.hint === config.key_hint)
        const rotated = yield* client.rotateKey({ query: accountQuery(account), payload: { key_id: keyId } })
        // Rotating this CLI's own key: keep working with the new secret.
        if (wasOurs) yield* updateConfig((c) => ({ ...c, key: rotated.key, key_hint: rotated.hint }))
        yield* show(
          asJson,
          rotated,
          () =>
            `${rotated.key}\n${dim(`${rotated.key_id} replaces ${rotated.replaces}; the old secret no longer works.`)}`
        )
      })
    ).pipe(Command.withDescription("A new secret for a key; the old one stops at once.")),
    Command.make("revoke", { json, account, keyId }, ({ json: asJson, account, keyId }) =>
      Effect.gen(function* () {
        const { client } = yield* withManagement
        const revoked = yield* client.revokeKey({ query: accountQuery(account), payload: { key_id: keyId } })
        yield* show(asJson, revoked, () => `Revoked ${revoked.key_id} at ${revoked.revoked_at}.`)
      })
    ).pipe(Command.withDescription("Revoke a key at once."))
  ])
)

const alert = Command.make(
  "alert",
  {
    account,
    threshold: Argument.Int("credits").pipe(
      Argument.withDescription("Alert below this many credits; 0 turns it off.")
    )
  },
  ({ account, threshold }) =>
    Effect.gen(function* () {
      if (threshold < 0) return yield* new UsageError({ message: "The threshold is 0 or more credits." })
      const { client } = yield* withManagement
      const set = yield* client.setBalanceAlert({ query: accountQuery(account), payload: { threshold } })
      yield* Console.log(
        threshold === 0
          ? "Balance alert off."
          : `An email when spendable credits fall below ${set.threshold}.`
      )
    })
).pipe(Command.withDescription("Email me when the credits fall below N (needs `svc login`)."))

const buy = Command.make(
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

const portal = Command.make("portal", { account }, ({ account }) =>
  Effect.gen(function* () {
    const { client } = yield* withManagement
    const answer = yield* client.billingPortal({ query: accountQuery(account) })
    yield* Console.log(answer.url)
    yield* openBrowser(answer.url)
  })
).pipe(
  Command.withDescription(
    "Print (and open) the billing portal link: purchases, plan, cancel (needs `svc login`)."
  )
)

const recover = Command.make("recover", { email: Argument.String("email") }, ({ email }) =>
  Effect.gen(function* () {
    const { client } = yield* session
    yield* client.recover({ payload: { email } })
    yield* Console.log(`If ${email} has claimed an account, a recovery link is on its way (1 hour).`)
  })
).pipe(Command.withDescription("Email a recovery link for an account claimed by EMAIL."))

const mcpConfig = Command.make(
  "mcp-config",
  { client: Argument.Literals("client", ["claude", "cursor", "vscode"] as const) },
  ({ client }) =>
    Effect.gen(function* () {
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
).pipe(Command.withDescription("Print the MCP client setup (claude, cursor or vscode) for this key."))

export const accountCommands = [
  init,
  loginCommand,
  logout,
  whoami,
  usage,
  receipts,
  keys,
  alert,
  buy,
  portal,
  recover,
  mcpConfig
] as const
