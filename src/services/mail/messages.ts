import { escapeHtml } from "../../domain/html.ts"

/** One message, as written to the outbox: plain text and simple HTML carrying the same words. */
export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string
  readonly kind: "sign_in" | "recovery" | "alert" | "webhook_disabled" | "topup_disarmed"
}

interface MailLink {
  readonly label: string
  readonly url: string
}

/** Paragraphs and links, rendered once as text and once as HTML. */
const compose = (
  to: string,
  kind: Mail["kind"],
  subject: string,
  paragraphs: ReadonlyArray<string>,
  links: ReadonlyArray<MailLink> = []
): Mail => {
  const textParts = [...paragraphs, ...links.map((link) => `${link.label}: ${link.url}`)]
  const htmlParts = [
    ...paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`),
    ...links.map((link) => `<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p>`)
  ]
  return {
    to,
    kind,
    subject,
    text: `${textParts.join("\n\n")}\n`,
    html: `<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">${htmlParts.join("")}</body></html>`
  }
}

/** The sign-in code (shown once, in the text) and the single-use link that does the same. */
export const signInMail = (input: {
  readonly to: string
  readonly code: string
  readonly link: string
  readonly minutes: number
  readonly claiming: boolean
}): Mail =>
  compose(
    input.to,
    "sign_in",
    `Your sign-in code: ${input.code}`,
    [
      `Your sign-in code is ${input.code}. It works once, for ${input.minutes} minutes.`,
      input.claiming
        ? "This sign-in was started with a trial key: it claims that key's trial account for this email address only where the key is given again (the claim page you started on, or the program holding the key). Entered anywhere else, it signs you in and claims nothing."
        : "Enter it where you asked to sign in, or open the link below in the same browser.",
      "If you did not ask to sign in, ignore this message; nothing changes without the code."
    ],
    [{ label: "Sign in", url: input.link }]
  )

/**
 * The answer to every recovery request, one message whether or not the address owns an account:
 * a single-use link per claimed account of the email, or (none) the ways to get one.
 */
export const recoveryMail = (input: {
  readonly to: string
  readonly links: ReadonlyArray<{ readonly accountId: string; readonly link: string }>
  readonly minutes: number
  readonly claimUrl: string
}): Mail =>
  input.links.length === 0
    ? compose(
        input.to,
        "recovery",
        "Account recovery",
        [
          "Someone asked to recover an account for this email address, but no claimed account belongs to it, so there is nothing to recover.",
          "A trial key you still have can be claimed for this address on the claim page. If you did not ask, ignore this message; nothing changed."
        ],
        [{ label: "Claim a trial key", url: input.claimUrl }]
      )
    : compose(
        input.to,
        "recovery",
        input.links.length === 1 ? `Recover account ${input.links[0]!.accountId}` : "Recover your accounts",
        [
          `Someone asked to recover ${input.links.length === 1 ? `account ${input.links[0]!.accountId}` : `the ${input.links.length} accounts of this email address`}. Following a link issues a new key for its account and revokes every other key of that account; balance, plan and receipts stay as they are.`,
          `Each link works once, for ${input.minutes} minutes. If you did not ask for this, ignore this message.`
        ],
        input.links.map(({ accountId, link }) => ({ label: `Issue a new key for ${accountId}`, url: link }))
      )

export const alertMail = (input: {
  readonly to: string
  readonly accountId: string
  readonly threshold: number
  readonly spendable: number
  readonly upgradeUrl: string
}): Mail =>
  compose(
    input.to,
    "alert",
    `Credits below ${input.threshold} on ${input.accountId}`,
    [
      `Account ${input.accountId} has ${input.spendable} spendable credits left, below your alert threshold of ${input.threshold}.`,
      "You get this message once each time the credits cross below the threshold."
    ],
    [{ label: "Buy credits", url: input.upgradeUrl }]
  )

/** An endpoint whose deliveries failed for `days` days: disabled, and how to bring it back. */
export const webhookDisabledMail = (input: {
  readonly to: string
  readonly accountId: string
  readonly webhookId: string
  readonly url: string
  readonly days: number
  readonly lastError: string
  readonly dashboardUrl: string
}): Mail =>
  compose(
    input.to,
    "webhook_disabled",
    `Webhook disabled on ${input.accountId}`,
    [
      `Every delivery to the webhook ${input.webhookId} (${input.url}) of account ${input.accountId} failed for ${input.days} days, so it is disabled: nothing more is sent to it.`,
      `The last attempt: ${input.lastError}`,
      "Once the receiver answers again, send it a test (POST /v1/webhooks/test, or the dashboard's Test button): that enables it again. Events of the disabled days are not sent."
    ],
    [{ label: "Webhooks", url: input.dashboardUrl }]
  )

/** Automatic top-up failed `failures` times in a row and is off until armed again. */
export const topupDisarmedMail = (input: {
  readonly to: string
  readonly accountId: string
  readonly failures: number
  readonly lastError: string
  readonly billingUrl: string
}): Mail =>
  compose(
    input.to,
    "topup_disarmed",
    `Automatic top-up turned off on ${input.accountId}`,
    [
      `The last ${input.failures} automatic top-ups of account ${input.accountId} failed, so automatic top-up is off: no more top-ups will be charged.`,
      `The last failure: ${input.lastError}`,
      "Check the payment method (a new checkout saves a new one), then arm automatic top-up again (POST /v1/topup, or the dashboard's Billing page)."
    ],
    [{ label: "Billing", url: input.billingUrl }]
  )
