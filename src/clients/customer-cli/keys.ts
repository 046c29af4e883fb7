import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { updateConfig } from "./config.ts"
import { account, accountQuery, json, show } from "./flags.ts"
import { dim, table } from "./output.ts"
import { UsageError, withManagement } from "./session.ts"

const keyId = Argument.String("key-id").pipe(Argument.withDescription("A key id from `svc keys list`."))

export const keys = Command.make("keys").pipe(
  Command.withDescription("The account's spend keys (needs `svc login`)."),
  Command.withSubcommands([
    Command.make("list", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const listed = yield* client.listKeys({ query: accountQuery(account, config) })
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
          const { client, config } = yield* withManagement
          const query = accountQuery(account, config)
          const created = yield* client.createKey({
            query,
            payload: Option.isSome(label) ? { label: label.value } : {}
          })
          // The CLI's key and account change together: `usage` and `keys` keep speaking of one account.
          if (use) {
            const listed = yield* client.listKeys({ query })
            yield* updateConfig((c) => ({
              ...c,
              key: created.key,
              key_hint: created.hint,
              account_id: listed.account_id
            }))
          }
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
        const listed = yield* client.listKeys({ query: accountQuery(account, config) })
        const wasOurs = listed.keys.some((k) => k.key_id === keyId && k.hint === config.key_hint)
        const rotated = yield* client.rotateKey({
          query: accountQuery(account, config),
          payload: { key_id: keyId }
        })
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
        const { client, config } = yield* withManagement
        const revoked = yield* client.revokeKey({
          query: accountQuery(account, config),
          payload: { key_id: keyId }
        })
        yield* show(asJson, revoked, () => `Revoked ${revoked.key_id} at ${revoked.revoked_at}.`)
      })
    ).pipe(Command.withDescription("Revoke a key at once."))
  ])
)

export const alert = Command.make(
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
      const { client, config } = yield* withManagement
      const set = yield* client.setBalanceAlert({
        query: accountQuery(account, config),
        payload: { threshold }
      })
      yield* Console.log(
        threshold === 0
          ? "Balance alert off."
          : `An email when spendable credits fall below ${set.threshold}.`
      )
    })
).pipe(Command.withDescription("Email me when the credits fall below N (needs `svc login`)."))
