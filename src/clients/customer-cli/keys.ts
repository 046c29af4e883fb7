import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { updateConfig } from "./config.ts"
import { account, accountQuery, json, show } from "./flags.ts"
import { delegationFlag, keyTree, limitFieldsOf, limitFlags, limitsText, newKeyFields } from "./keyLimits.ts"
import { dim } from "./output.ts"
import { NotSignedIn, session, UsageError, withManagement } from "./session.ts"

const keyId = Argument.String("key-id").pipe(Argument.withDescription("A key id from `svc keys list`."))

/** The CLI's spend key (SVC_KEY or the config's): a child key is made by its parent key, not by a sign-in. */
const withSpendKey = Effect.flatMap(session, (s) =>
  s.config.key === undefined
    ? Effect.fail(
        new NotSignedIn({
          message:
            "Child keys are made with a spend key: set SVC_KEY, or run `svc init` or `svc keys create --use`."
        })
      )
    : Effect.succeed(s)
)

/** `svc keys child ...`: bounded keys this CLI's key hands to sub-agents. */
const childKeys = Command.make("child").pipe(
  Command.withDescription(
    "Child keys of this CLI's spend key (SVC_KEY or the config's): a sub-agent's key inside its limits."
  ),
  Command.withSubcommands([
    Command.make(
      "create",
      { json, label: Flag.String("label").pipe(Flag.optional), ...limitFlags },
      ({ json: asJson, label, ...limits }) =>
        Effect.gen(function* () {
          const fields = newKeyFields(yield* limitFieldsOf(limits))
          const cap = fields.spend_cap_credits
          if (cap === undefined || cap === null)
            return yield* new UsageError({
              message: "A child key needs --cap N (credits, 1 or more), within what this key's cap has left."
            })
          const { client } = yield* withSpendKey
          const created = yield* client.createChildKey({
            payload: {
              ...(Option.isSome(label) ? { label: label.value } : {}),
              ...fields,
              spend_cap_credits: cap
            }
          })
          yield* show(
            asJson,
            created,
            () =>
              `${created.key}\n${dim(`${created.key_id} (child of ${created.parent_key_id}): shown once; hand it to the sub-agent.`)}`
          )
        })
    ).pipe(
      Command.withDescription(
        "Make a child key (--cap required; --period, --platforms within this key's); its secret is printed once. The key needs its owner's --may-delegate."
      )
    ),
    Command.make("list", { json }, ({ json: asJson }) =>
      Effect.gen(function* () {
        const { client } = yield* withSpendKey
        const listed = yield* client.listChildKeys()
        yield* show(asJson, listed, () =>
          listed.keys.length === 0
            ? dim(`(no child keys of ${listed.parent_key_id})`)
            : keyTree(listed.keys.map((key) => ({ ...key, parent_key_id: null })))
        )
      })
    ).pipe(Command.withDescription("List this key's child keys (never their secrets).")),
    Command.make(
      "update",
      { json, keyId, cap: limitFlags.cap, platforms: limitFlags.platforms },
      ({ json: asJson, keyId, cap, platforms }) =>
        Effect.gen(function* () {
          const fields = yield* limitFieldsOf({ cap, platforms, period: Option.none() })
          if (fields.spend_cap_credits === null)
            return yield* new UsageError({
              message: "A child key keeps a cap: --cap takes N (credits, 1 or more)."
            })
          if (Object.keys(fields).length === 0)
            return yield* new UsageError({
              message: "Nothing to change: give --cap N or --platforms LIST|all."
            })
          const { client } = yield* withSpendKey
          const updated = yield* client.updateChildKey({
            payload: {
              key_id: keyId,
              ...(fields.spend_cap_credits === undefined
                ? {}
                : { spend_cap_credits: fields.spend_cap_credits }),
              ...(fields.platforms === undefined ? {} : { platforms: fields.platforms })
            }
          })
          yield* show(asJson, updated, () => `${updated.key_id}: ${limitsText(updated)}`)
        })
    ).pipe(
      Command.withDescription(
        "Change one of this key's child keys: --cap N, --platforms LIST|all (all: this key's), within this key's own."
      )
    ),
    Command.make("revoke", { json, keyId }, ({ json: asJson, keyId }) =>
      Effect.gen(function* () {
        const { client } = yield* withSpendKey
        const revoked = yield* client.revokeChildKey({ payload: { key_id: keyId } })
        yield* show(asJson, revoked, () => `Revoked child key ${revoked.key_id} at ${revoked.revoked_at}.`)
      })
    ).pipe(Command.withDescription("Revoke one of this key's child keys at once."))
  ])
)

export const keys = Command.make("keys").pipe(
  Command.withDescription("The account's spend keys (needs `svc login`)."),
  Command.withSubcommands([
    Command.make("list", { json, account }, ({ json: asJson, account }) =>
      Effect.gen(function* () {
        const { client, config } = yield* withManagement
        const listed = yield* client.listKeys({ query: accountQuery(account, config) })
        yield* show(asJson, listed, () => keyTree(listed.keys))
      })
    ).pipe(
      Command.withDescription(
        "List the keys (never their secrets): each one's cap, what it spent and when that resets, platforms and whether it may delegate; child keys under their parent."
      )
    ),
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
        ),
        ...limitFlags,
        ...delegationFlag
      },
      ({ json: asJson, account, label, use, mayDelegate, ...limits }) =>
        Effect.gen(function* () {
          const fields = newKeyFields(yield* limitFieldsOf(limits))
          const { client, config } = yield* withManagement
          const query = accountQuery(account, config)
          const created = yield* client.createKey({
            query,
            payload: {
              ...(Option.isSome(label) ? { label: label.value } : {}),
              ...fields,
              ...(Option.isSome(mayDelegate) ? { may_delegate: mayDelegate.value } : {})
            }
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
            () =>
              `${created.key}\n${dim(`${created.key_id}: shown once; keep it safe. ${limitsText({ ...created, revoked_at: null, parent_key_id: null, spent_in_period: created.spend_cap_credits === null ? null : 0, cap_resets_at: null, last_used_at: null })}`)}`
          )
        })
    ).pipe(
      Command.withDescription(
        "Create a key; its secret is printed once. `--cap 500 --period day --platforms forum` limits it; `--may-delegate` lets it make child keys. A key does not expire: revoke it to end it."
      )
    ),
    Command.make(
      "update",
      { json, account, keyId, ...limitFlags, ...delegationFlag },
      ({ json: asJson, account, keyId, mayDelegate, ...limits }) =>
        Effect.gen(function* () {
          const fields = {
            ...(yield* limitFieldsOf(limits)),
            ...(Option.isSome(mayDelegate) ? { may_delegate: mayDelegate.value } : {})
          }
          if (Object.keys(fields).length === 0)
            return yield* new UsageError({
              message:
                "Nothing to change: give --cap, --period, --platforms or --may-delegate / --no-may-delegate."
            })
          const { client, config } = yield* withManagement
          const updated = yield* client.updateKey({
            query: accountQuery(account, config),
            payload: { key_id: keyId, ...fields }
          })
          yield* show(asJson, updated, () => `${updated.key_id}: ${limitsText(updated)}`)
        })
    ).pipe(
      Command.withDescription(
        "Change a key's limits: --cap N|none, --period day|month|total, --platforms LIST|all, --may-delegate|--no-may-delegate; the rest stays."
      )
    ),
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
    ).pipe(Command.withDescription("Revoke a key at once (and the child keys it made).")),
    childKeys
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
