import { escapeHtml } from "../surfaces/http/pages/html.ts"

/** One message, as written to the outbox: plain text and simple HTML carrying the same words. */
export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string
  readonly kind: "sign_in" | "recovery" | "alert"
}

/** Paragraphs and at most one link, rendered once as text and once as HTML. */
const compose = (
  to: string,
  kind: Mail["kind"],
  subject: string,
  paragraphs: ReadonlyArray<string>,
  link?: { readonly label: string; readonly url: string }
): Mail => {
  const textParts = [...paragraphs, ...(link === undefined ? [] : [`${link.label}: ${link.url}`])]
  const htmlParts = [
    ...paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`),
    ...(link === undefined ? [] : [`<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p>`])
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
        ? "Signing in claims the trial account of the key you started with for this email address."
        : "Enter it where you asked to sign in, or open the link below in the same browser.",
      "If you did not ask to sign in, ignore this message; nothing changes without the code."
    ],
    { label: "Sign in", url: input.link }
  )

/** One recovery link per claimed account of the email. */
export const recoveryMail = (input: {
  readonly to: string
  readonly accountId: string
  readonly link: string
  readonly minutes: number
}): Mail =>
  compose(
    input.to,
    "recovery",
    `Recover account ${input.accountId}`,
    [
      `Someone asked to recover account ${input.accountId}. Following the link issues a new key and revokes every other key of the account; balance, plan and receipts stay as they are.`,
      `The link works once, for ${input.minutes} minutes. If you did not ask for it, ignore this message.`
    ],
    { label: "Issue a new key", url: input.link }
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
    { label: "Buy credits", url: input.upgradeUrl }
  )
