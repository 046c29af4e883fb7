// Subpath imports: the package index loads every Node adapter and adds about a second to each command.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Console, Data, Effect, Layer, Runtime } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { baseUrlArgument, svc } from "./commands.ts"
import { baseUrlOf, defaultBaseUrl } from "./config.ts"
import { red } from "./output.ts"

/** Already written to stderr; only its exit code is left to report. */
class Reported extends Data.TaggedError("Reported")<{ readonly exitCode: number }> {
  override readonly [Runtime.errorReported] = false
  override get [Runtime.errorExitCode]() {
    return this.exitCode
  }
}

const paymentTags = new Set([
  "InsufficientCredits",
  "KeyCapReached",
  "TrialCapExceeded",
  "BudgetExhausted",
  "QuoteExceedsMaxCredits"
])
const authTags = new Set(["KeyRequired", "Unauthorized", "AuthRequired", "NotSignedIn"])

/** 2 usage, 3 payment needed, 4 auth, 1 anything else (the issue's table). */
export const exitCodeOf = (error: unknown): number => {
  if (CliError.isCliError(error)) return 2
  const tag = (error as { readonly _tag?: string } | undefined)?._tag ?? ""
  if (tag === "UsageError" || tag === "InvalidInput") return 2
  if (paymentTags.has(tag)) return 3
  if (authTags.has(tag)) return 4
  if (tag === "Abandoned") return (error as { readonly auth: boolean }).auth ? 4 : 1
  return 1
}

/** A request that never reached the service: no answer at all, as opposed to a problem. */
const isUnreachable = (error: unknown) => {
  const failure = error as { readonly _tag?: string; readonly reason?: { readonly _tag?: string } }
  return failure?._tag === "HttpClientError" && failure.reason?._tag === "TransportError"
}

const unreachable = () => {
  const baseUrl = baseUrlOf({})
  const configured = process.env.SVC_BASE_URL
    ? "SVC_BASE_URL or --base-url"
    : "the config file or the default"
  return [
    `Cannot reach the service at ${baseUrl} (from ${configured}).`,
    baseUrl === defaultBaseUrl
      ? "Start it locally with `npm start`, or point the CLI elsewhere:"
      : "Check that it is running and the address is right, or point the CLI elsewhere:",
    "  SVC_BASE_URL=https://your-service svc ...   or   svc --base-url https://your-service ..."
  ].join("\n")
}

const describe = (error: unknown): string => {
  if (isUnreachable(error)) return unreachable()
  if (CliError.isCliError(error))
    return error._tag === "ShowHelp"
      ? error.errors.map((e) => e.message).join("; ") ||
          `Give a command after \`${error.commandPath.join(" ")}\`; see --help.`
      : error.message
  const problem = error as {
    readonly code?: string
    readonly message?: string
    readonly upgrade_url?: string
    readonly offer?: { readonly checkout_url: string; readonly resume: { readonly detail: string } }
    readonly retry_after_seconds?: number
    readonly credits_available?: number
    readonly cap_resets_at?: string
    readonly account_ids?: ReadonlyArray<string>
  }
  const lines = [
    `${problem.code ?? (error as { _tag?: string })._tag ?? "Error"}: ${problem.message ?? String(error)}`
  ]
  // The key's own cap, not the account's credits: buying does not lift it, raising it does.
  if ((error as { readonly _tag?: string })._tag === "KeyCapReached")
    lines.push(
      `The key's spend cap has ${problem.credits_available ?? 0} credits left${
        problem.cap_resets_at === undefined ? "" : ` until it starts afresh at ${problem.cap_resets_at}`
      }. Raise it with \`svc keys update <key_id> --cap N\` (after \`svc login\`), then run the command again.`
    )
  else if (problem.offer)
    lines.push(`Buy credits: svc buy flex (or ${problem.offer.checkout_url}). ${problem.offer.resume.detail}`)
  else if (problem.upgrade_url) lines.push(`Upgrade: ${problem.upgrade_url}`)
  // A sign-in that governs several accounts: which ones, and how to pick one.
  if (problem.account_ids !== undefined && problem.account_ids.length > 0)
    lines.push(
      `Your sign-in governs ${problem.account_ids.length} accounts: ${problem.account_ids.join(", ")}. Pick one with --account <account_id>.`
    )
  if (problem.retry_after_seconds !== undefined) lines.push(`Retry after ${problem.retry_after_seconds} s.`)
  return lines.join("\n")
}

/** With `--json`, a failure is one JSON object on stderr too: the problem's fields, or the local error's. */
const asJson = (error: unknown) => {
  if (CliError.isCliError(error)) return JSON.stringify({ code: "USAGE", message: describe(error) })
  const { _tag, ...fields } = { ...(error as Record<string, unknown>) }
  const message = isUnreachable(error)
    ? unreachable()
    : error instanceof Error
      ? error.message
      : String(error)
  return JSON.stringify({ code: fields.code ?? _tag ?? "ERROR", message, ...fields })
}

/** Help and version go to stdout as usual; invocation errors are rendered below, once. */
const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation" || (event._tag === "Help" && event.reason === "Implicit")
      ? Effect.void
      : CliOutput.defaultPresenter.present(event)
})

// `--base-url` is SVC_BASE_URL for this run, whichever command reads it (see `baseUrlFlag`).
const flagged = baseUrlArgument(process.argv.slice(2))
if (flagged !== undefined) process.env.SVC_BASE_URL = flagged

Command.run(svc, { version: "0.1.0", renderErrors: false }).pipe(
  Effect.catchCause((cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    const error = Cause.squash(cause)
    const text = process.argv.includes("--json") ? asJson(error) : red(describe(error), process.stderr)
    return Console.error(text).pipe(
      Effect.andThen(Effect.fail(new Reported({ exitCode: exitCodeOf(error) })))
    )
  }),
  Effect.provide(Layer.mergeAll(NodeServices.layer, presenter)),
  NodeRuntime.runMain
)
