import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { webhookEventTypes } from "../../../domain/webhooks.ts"
import type { WebhookCreated, WebhookDeliveries, WebhookListing } from "../../../webhooks/Webhooks.ts"
import { Webhooks } from "../../../webhooks/Webhooks.ts"
import { createWebhook, deleteWebhook, testWebhook, webhookDeliveries } from "../../common/management.ts"
import { html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import {
  accountQuery,
  dashboardPage,
  dateOf,
  type Frame,
  formFields,
  hidden,
  itemList,
  type Notes,
  notes
} from "./layout.ts"

const subscribable = webhookEventTypes.filter((type) => type !== "ping")

/** What each event means, for the form's checkboxes. */
const meaning: Record<(typeof subscribable)[number], string> = {
  "balance.low": "the spendable credits fell below the balance alert",
  "credits.purchased": "credits were bought (a pack, a period, a top-up)",
  "key.cap_reached": "a key's spend cap refused a call",
  "key.created": "a key was created (or rotated)",
  "key.revoked": "a key was revoked",
  "subscription.renewed": "a subscription period was paid",
  "subscription.ended": "a subscription ended",
  "topup.succeeded": "an automatic top-up was paid",
  "topup.failed": "an automatic top-up failed"
}

const hookActions = (frame: Frame, hook: WebhookListing) =>
  html`<a href="${frame.baseUrl}/dashboard/webhooks/deliveries?${accountQuery(frame.account)}&amp;webhook=${hook.webhook_id}">Deliveries</a>
<form method="post" action="${frame.baseUrl}/dashboard/webhooks/test" class="inline">${formFields(frame.csrf, frame.account)}${hidden("webhook_id", hook.webhook_id)}<button type="submit" aria-label="Send a test to ${hook.url}">${hook.state === "disabled" ? "Test and enable" : "Send a test"}</button></form>
<form method="post" action="${frame.baseUrl}/dashboard/webhooks/delete" class="inline">${formFields(frame.csrf, frame.account)}${hidden("webhook_id", hook.webhook_id)}<button type="submit" aria-label="Delete the webhook ${hook.url}">Delete</button></form>`

/** The secret's one showing, and how a receiver checks a delivery with it. */
const revealed = (created: WebhookCreated) =>
  html`<section aria-labelledby="new-secret" class="note"><h2 id="new-secret">Signing secret of ${created.url}</h2>
<p><strong>Copy it now: this is the only time it is shown.</strong> Your receiver verifies every delivery with it
(Standard Webhooks: the <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> headers).</p>
<code class="secret" id="new-webhook-secret">${created.secret}</code>
<button type="button" data-copy="new-webhook-secret" hidden>Copy the secret</button>
<p>In Node: <code>new Webhook(secret).verify(rawBody, headers)</code> from the <code>standardwebhooks</code> package.</p></section>`

/** Webhooks: the endpoints, a new one's secret once, the form to add one. */
export const webhooksPage = (
  frame: Frame,
  hooks: ReadonlyArray<WebhookListing>,
  options: Notes & { readonly created?: WebhookCreated | undefined; readonly url?: string | undefined } = {}
) =>
  dashboardPage(
    frame,
    "webhooks",
    "Webhooks",
    html`${notes(options)}${options.created === undefined ? "" : revealed(options.created)}
<p>We POST each event you choose to your URL, signed, and retry for 24 hours until it answers 2xx. An endpoint that
fails for 3 days is disabled and you get an email; sending it a test enables it again.</p>
${
  hooks.length === 0
    ? html`<p>No webhook yet on <code>${frame.account.id}</code>.</p>`
    : itemList(
        `Webhooks of ${frame.account.id}`,
        hooks.map((hook) => ({
          title: hook.url,
          facts: [
            ["Id", html`<code>${hook.webhook_id}</code>`],
            ["Events", hook.events.join(", ")],
            ["State", hook.state === "disabled" ? `disabled ${dateOf(hook.disabled_at)}` : "active"],
            ["Failing since", hook.failing_since === null ? "no failure" : dateOf(hook.failing_since)],
            ["Waiting", String(hook.pending)],
            ["Created", dateOf(hook.created_at)]
          ],
          actions: hookActions(frame, hook)
        }))
      )
}
<h2 id="add">Add a webhook</h2>
<form method="post" action="${frame.baseUrl}/dashboard/webhooks">${formFields(frame.csrf, frame.account)}
<label for="url">URL (https)</label><input id="url" name="url" type="url" maxlength="2048" required placeholder="https://example.com/hooks/svc" value="${options.url ?? ""}" autocomplete="off">
<fieldset><legend>Events</legend>${subscribable.map(
      (type) =>
        html`<div><input type="checkbox" id="event-${type}" name="event:${type}" value="on"><label for="event-${type}" style="display:inline;font-weight:400"><code>${type}</code>: ${meaning[type]}</label></div>`
    )}</fieldset>
<button type="submit">Add webhook</button></form>`,
    { copy: options.created !== undefined }
  )

/** One endpoint's attempts, newest first, and what waits to be sent. */
export const deliveriesPage = (frame: Frame, hook: WebhookListing, found: WebhookDeliveries) =>
  dashboardPage(
    frame,
    "webhooks",
    "Deliveries",
    html`<p>To <code>${hook.url}</code> (<code>${hook.webhook_id}</code>). <a href="${frame.baseUrl}/dashboard/webhooks?${accountQuery(frame.account)}">All webhooks</a></p>
<h2>Attempts</h2>${
      found.attempts.length === 0
        ? html`<p>No attempt yet.</p>`
        : html`<table tabindex="0"><caption>The last attempts, newest first</caption><thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Try</th><th scope="col">Result</th><th scope="col">Answer</th></tr></thead>
<tbody>${found.attempts.map(
            (attempt) =>
              html`<tr><td>${dateOf(attempt.attempted_at)}</td><td><code>${attempt.type}</code> <code>${attempt.event_id}</code></td><td class="n">${attempt.attempt}</td><td>${attempt.status}${attempt.response_code === null ? "" : ` (${attempt.response_code})`}, ${attempt.duration_ms} ms</td><td>${attempt.error ?? ""}${attempt.response_body === null || attempt.response_body === "" ? "" : html` <code>${attempt.response_body.slice(0, 200)}</code>`}</td></tr>`
          )}</tbody></table>`
    }
<h2>Waiting</h2>${
      found.pending.length === 0
        ? html`<p>Nothing waits to be sent.</p>`
        : html`<ul>${found.pending.map(
            (waiting) =>
              html`<li><code>${waiting.type}</code> <code>${waiting.event_id}</code>: ${waiting.attempts} ${waiting.attempts === 1 ? "try" : "tries"} so far, next ${dateOf(waiting.next_attempt_at)}</li>`
          )}</ul>`
    }`
  )

/** `/dashboard/webhooks`: list, add (the secret shown once), test, delete, and each one's deliveries. */
export const WebhooksRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const webhooks = yield* Webhooks
    const services = yield* Effect.context<Webhooks>()
    const show = (frame: Frame, options: Parameters<typeof webhooksPage>[2] = {}, status = 200) =>
      Effect.map(webhooks.list(frame.account.id), (hooks) =>
        guard.respond(webhooksPage(frame, hooks, options), status)
      )

    yield* router.add(
      "GET",
      "/dashboard/webhooks",
      guard.signedInPage((frame) => show(frame))
    )

    yield* router.add(
      "GET",
      "/dashboard/webhooks/deliveries",
      guard
        .signedInPage((frame, governor, query) =>
          Effect.gen(function* () {
            const webhookId = (query.get("webhook") ?? "").slice(0, 64)
            const hook = (yield* webhooks.list(frame.account.id)).find((one) => one.webhook_id === webhookId)
            if (hook === undefined)
              return yield* show(
                frame,
                { error: "That webhook is not one of this account's. Choose one below." },
                404
              )
            const found = yield* webhookDeliveries(governor, {
              account_id: frame.account.id,
              webhook_id: webhookId,
              limit: 50
            })
            return guard.respond(deliveriesPage(frame, hook, found))
          })
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/webhooks",
      guard
        .signedInForm((frame, governor, form) =>
          Effect.gen(function* () {
            const url = form.get("url")
            const events = subscribable.filter((type) => form.get(`event:${type}`) === "on")
            const created = yield* createWebhook(governor, {
              account_id: frame.account.id,
              url,
              events
            }).pipe(Effect.result)
            if (created._tag === "Failure") {
              const error = created.failure
              return yield* show(
                frame,
                {
                  error:
                    error._tag === "InvalidInput"
                      ? error.message
                      : "Your sign-in cannot change this account (it may be suspended).",
                  url
                },
                error._tag === "InvalidInput" ? 400 : 403
              )
            }
            return yield* show(frame, { created: created.success }, 201)
          })
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/webhooks/test",
      guard
        .signedInForm((frame, governor, form) =>
          testWebhook(governor, {
            account_id: frame.account.id,
            webhook_id: form.get("webhook_id").slice(0, 64)
          }).pipe(
            Effect.flatMap((tested) =>
              show(frame, {
                ok: `A ping (${tested.event_id}) is on its way; its deliveries page shows how it went.`
              })
            ),
            Effect.catchTags({
              NotFound: () => show(frame, { error: "That webhook is not one of this account's." }, 404),
              RateLimited: (error) => show(frame, { error: error.message }, 429),
              Unauthorized: (error) => show(frame, { error: error.message }, 403),
              AuthRequired: (error) => show(frame, { error: error.message }, 403)
            })
          )
        )
        .pipe(Effect.provideContext(services))
    )

    yield* router.add(
      "POST",
      "/dashboard/webhooks/delete",
      guard
        .signedInForm((frame, governor, form) =>
          deleteWebhook(governor, {
            account_id: frame.account.id,
            webhook_id: form.get("webhook_id").slice(0, 64)
          }).pipe(
            Effect.flatMap(() => show(frame, { ok: "The webhook is deleted: nothing more is sent to it." })),
            Effect.catchTags({
              NotFound: () =>
                show(
                  frame,
                  { error: "That webhook is not one of this account's (or is already deleted)." },
                  404
                ),
              Unauthorized: (error) => show(frame, { error: error.message }, 403),
              AuthRequired: (error) => show(frame, { error: error.message }, 403)
            })
          )
        )
        .pipe(Effect.provideContext(services))
    )
  })
)
