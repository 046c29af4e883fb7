import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import type { Account } from "../../../domain/accounts.ts"
import type { IssuedKey, KeyListing } from "../../../services/Keys.ts"
import { Keys } from "../../../services/Keys.ts"
import { createKey, revokeKey, rotateKey, updateKey } from "../../common/management.ts"
import { count } from "../checkout/format.ts"
import { html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import { capText, delegationText, limitArgsOf, limitFields, platformsText } from "./keyLimits.ts"
import {
  accountQuery,
  dashboardPage,
  dateOf,
  type Frame,
  formFields,
  hidden,
  itemList,
  type Notes,
  notes,
  okNote
} from "./layout.ts"

const revokeButton = (frame: Frame, key: KeyListing, what: string) =>
  html`<form method="post" action="${frame.baseUrl}/dashboard/keys/revoke" class="inline">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}<button type="submit" class="danger" aria-label="Revoke ${what} ${key.hint}">Revoke&hellip;</button></form>`

const keyActions = (frame: Frame, key: KeyListing) =>
  key.revoked_at !== null
    ? html`<p>Revoked ${dateOf(key.revoked_at)}.</p>`
    : html`<a href="${frame.baseUrl}/dashboard/keys/edit?${accountQuery(frame.account)}&amp;key=${key.key_id}" aria-label="Edit limits of key ${key.hint}">Edit limits</a>
<form method="post" action="${frame.baseUrl}/dashboard/keys/rotate" class="inline">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}<button type="submit" aria-label="Rotate key ${key.hint}">Rotate&hellip;</button></form>${revokeButton(frame, key, "key")}`

/** A key's facts: its hint, limits, and when it was made and last used. */
const keyFacts = (key: KeyListing): ReadonlyArray<readonly [string, ReturnType<typeof html> | string]> => [
  ["Key", html`<code>${key.hint}</code>`],
  ["Spend cap", capText(key)],
  ["Platforms", platformsText(key)],
  ["May delegate", delegationText(key)],
  ["Created", dateOf(key.created_at)],
  ["Last used", dateOf(key.last_used_at)]
]

/** The child keys an agent made with `parent`, under it: the owner sees and revokes them here. */
const childList = (frame: Frame, parent: KeyListing, children: ReadonlyArray<KeyListing>) =>
  children.length === 0
    ? ""
    : html`<p><strong>Child keys of ${parent.hint}</strong> (made with it by an agent):</p>${itemList(
        `Child keys of ${parent.hint}`,
        children.map((child) => ({
          title: html`Child key: ${child.label ?? "(no label)"}`,
          facts: keyFacts(child),
          actions:
            child.revoked_at !== null
              ? html`<p>Revoked ${dateOf(child.revoked_at)}.</p>`
              : revokeButton(frame, child, "child key")
        }))
      )}`

/** A secret's one showing, with the copy button. */
const revealed = (issued: IssuedKey, replaces?: string) =>
  html`<section aria-labelledby="new-key" class="note"><h2 id="new-key">Your new key${replaces === undefined ? "" : html` (replaces <code>${replaces}</code>, which stopped working)`}</h2>
<p><strong>Copy it now: this is the only time it is shown.</strong> It is stored only as a hash; if you lose it, rotate it.</p>
<code class="secret" id="new-key-secret">${issued.key}</code>
<button type="button" data-copy="new-key-secret" hidden>Copy the key</button>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p></section>`

/** Keys: list, create, and the one showing of a new or rotated key. */
export const keysPage = (
  frame: Frame,
  keys: ReadonlyArray<KeyListing>,
  options: Notes & {
    readonly issued?: IssuedKey | undefined
    readonly replaces?: string | undefined
    readonly grant?: number | undefined
  } = {}
) =>
  dashboardPage(
    frame,
    "keys",
    "Keys",
    html`${notes(options)}${options.issued === undefined ? "" : revealed(options.issued, options.replaces)}${
      (options.grant ?? 0) > 0
        ? okNote(`This first key also brought a one-time grant of ${count(options.grant!)} credits.`)
        : ""
    }
${
  keys.length === 0
    ? html`<p>This account has no keys. Create one below to call the API.</p>`
    : itemList(
        `Keys of ${frame.account.id}`,
        topLevel(keys).map((key) => ({
          title: key.label ?? "(no label)",
          facts: keyFacts(key),
          actions: html`${keyActions(frame, key)}${childList(
            frame,
            key,
            keys.filter((child) => child.parent_key_id === key.key_id)
          )}`
        }))
      )
}
<h2>Create a key</h2>
<form method="post" action="${frame.baseUrl}/dashboard/keys">${formFields(frame.csrf, frame.account)}
<label for="label">Label (optional)</label><input id="label" name="label" maxlength="100" autocomplete="off">
${limitFields(frame.account)}
<button type="submit">Create key</button></form>
<p>An agent makes child keys for its sub-agents with its own key, if you let that key delegate ("May make child keys"; <code>POST /v1/keys/child</code> or the
<code>create_child_key</code> tool on <code>/mcp</code>); they appear here under the key that made them.</p>`,
    { copy: options.issued !== undefined }
  )

/** The account's own keys, and child keys whose parent is no longer listed. */
const topLevel = (keys: ReadonlyArray<KeyListing>) => {
  const ids = new Set(keys.map((key) => key.key_id))
  return keys.filter((key) => key.parent_key_id === null || !ids.has(key.parent_key_id))
}

/** One key's limits, to change: the same fields as a new key's, filled with the key's own. */
export const editKeyPage = (frame: Frame, key: KeyListing, options: Notes = {}) =>
  dashboardPage(
    frame,
    "keys",
    "Edit a key's limits",
    html`${notes(options)}<p>Key <code>${key.hint}</code>${key.label === null ? "" : html` (${key.label})`}: ${capText(key)}.</p>
<form method="post" action="${frame.baseUrl}/dashboard/keys/update">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}
${limitFields(frame.account, key)}
<p>A cap counts what the key and its child keys already spent in the period. Lowering it below that stops the key until the period starts afresh.</p>
<button type="submit">Save limits</button>
<a href="${frame.baseUrl}/dashboard/keys?${accountQuery(frame.account)}">Cancel</a></form>`
  )

/** The confirmation step of a rotation or revocation. */
export const confirmKeyPage = (frame: Frame, action: "rotate" | "revoke", key: KeyListing) =>
  dashboardPage(
    frame,
    "keys",
    action === "revoke" ? "Revoke this key?" : "Rotate this key?",
    html`<p>Key <code>${key.hint}</code>${key.label === null ? "" : html` (${key.label})`}, created ${dateOf(key.created_at)},
last used ${dateOf(key.last_used_at)}.</p>
<p>${
      action === "revoke"
        ? "It stops working at once, and so do the child keys it made: every program that uses them gets UNAUTHORIZED. The account, its credits and its other keys stay."
        : "The old secret stops working at once; the next page shows the new one, once."
    }</p>
<form method="post" action="${frame.baseUrl}/dashboard/keys/${action}">${formFields(frame.csrf, frame.account)}${hidden("key_id", key.key_id)}${hidden("confirm", "yes")}
<button type="submit" class="${action === "revoke" ? "danger" : ""}">${action === "revoke" ? "Yes, revoke it" : "Yes, rotate it"}</button>
<a href="${frame.baseUrl}/dashboard/keys?${accountQuery(frame.account)}">No, keep it</a></form>`
  )

/**
 * `/dashboard/keys`: list and create; rotate and revoke after a confirmation page. A new secret is
 * in the answer to its form only (never stored, never in a link), with a copy button.
 */
export const KeysRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const keys = yield* Keys
    const services = yield* Effect.context<Keys>()
    const keysOf = (account: Account) => keys.list(account.id)
    const showKeys = (frame: Frame, options: Parameters<typeof keysPage>[2] = {}, status = 200) =>
      Effect.map(keysOf(frame.account), (listed) => guard.respond(keysPage(frame, listed, options), status))

    yield* router.add(
      "GET",
      "/dashboard/keys",
      guard.signedInPage((frame) => showKeys(frame))
    )

    yield* router.add(
      "POST",
      "/dashboard/keys",
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const label = form.get("label").slice(0, 100)
            const read = limitArgsOf(form, frame.account)
            if ("error" in read) return yield* showKeys(frame, { error: read.error }, 400)
            return yield* createKey(governor, {
              account_id: frame.account.id,
              label: label === "" ? undefined : label,
              ...read.args
            }).pipe(
              Effect.flatMap((issued) => showKeys(frame, { issued, grant: issued.grant_credits }, 201)),
              // At the account's cap of active keys: the page says so, and which step frees a place.
              Effect.catchTag("InvalidInput", (refused) => showKeys(frame, { error: refused.message }, 400))
            )
          })
        )
        .pipe(Effect.provideContext(services))
    )

    /** This account's key `keyId`, still working and its own (not a child key), for its limits. */
    const editable = (frame: Frame, keyId: string) =>
      Effect.map(keysOf(frame.account), (listed) =>
        listed.find((key) => key.key_id === keyId && key.revoked_at === null && key.parent_key_id === null)
      )
    const notEditable = (frame: Frame) =>
      showKeys(
        frame,
        { error: "That key is not one of this account's working keys. Choose a key from the list." },
        404
      )

    yield* router.add(
      "GET",
      "/dashboard/keys/edit",
      guard.signedInPage((frame, _governor, query) =>
        Effect.gen(function* () {
          const key = yield* editable(frame, (query.get("key") ?? "").slice(0, 64))
          return key === undefined ? yield* notEditable(frame) : guard.respond(editKeyPage(frame, key))
        })
      )
    )

    yield* router.add(
      "POST",
      "/dashboard/keys/update",
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const key = yield* editable(frame, form.get("key_id").slice(0, 64))
            if (key === undefined) return yield* notEditable(frame)
            const read = limitArgsOf(form, frame.account, key)
            if ("error" in read) return guard.respond(editKeyPage(frame, key, { error: read.error }), 400)
            return yield* updateKey(governor, {
              account_id: frame.account.id,
              key_id: key.key_id,
              ...read.args
            }).pipe(
              Effect.flatMap((updated) =>
                showKeys(frame, { ok: `Key ${updated.hint}: limits saved. Spend cap: ${capText(updated)}.` })
              ),
              Effect.catchTags({
                InvalidInput: (refused) =>
                  Effect.succeed(guard.respond(editKeyPage(frame, key, { error: refused.message }), 400)),
                NotFound: () => notEditable(frame)
              })
            )
          })
        )
        .pipe(Effect.provideContext(services))
    )

    const keyAction = (action: "rotate" | "revoke") =>
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const keyId = form.get("key_id")
            // Only this account's keys: another account's key id is not found here.
            const key = (yield* keysOf(frame.account)).find((listed) => listed.key_id === keyId)
            if (key === undefined || key.revoked_at !== null)
              return yield* showKeys(
                frame,
                {
                  error:
                    key === undefined
                      ? "That key is not one of this account's keys. Choose a key from the list."
                      : "That key is already revoked; create a new one below."
                },
                404
              )
            if (form.get("confirm") !== "yes") return guard.respond(confirmKeyPage(frame, action, key))
            const args = { account_id: frame.account.id, key_id: key.key_id }
            if (action === "revoke") {
              yield* revokeKey(governor, args)
              return yield* showKeys(frame, {
                ok: `Key ${key.hint} is revoked: it no longer works. Programs that used it need another key.`
              })
            }
            const rotated = yield* rotateKey(governor, args)
            return yield* showKeys(frame, { issued: rotated, replaces: key.hint })
          })
        )
        .pipe(Effect.provideContext(services))
    yield* router.add("POST", "/dashboard/keys/rotate", keyAction("rotate"))
    yield* router.add("POST", "/dashboard/keys/revoke", keyAction("revoke"))
  })
)
