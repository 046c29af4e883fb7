// Subpath imports: the package index loads every Node adapter and adds about a second to each command.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Console, Data, Effect, Layer, Runtime } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { RpcClientError } from "effect/rpc/RpcClientError"
import { defaultServiceUrl, serviceUrl } from "./AdminClient.ts"
import { cli } from "./commands.ts"

/** Already written to stderr as one JSON line; only its exit code is left to report. */
class Reported extends Data.TaggedError("Reported")<{ readonly exitCode: number }> {
  override readonly [Runtime.errorReported] = false
  override get [Runtime.errorExitCode]() {
    return this.exitCode
  }
}

const usage = (error: CliError.CliError) =>
  error._tag === "ShowHelp"
    ? error.errors.map((e) => e.message).join("; ") ||
      `Give a command after \`${error.commandPath.join(" ")}\`; see --help.`
    : error.message

/** The transport's messages nest (HTTP error, transport error, fetch failure, socket error): join them. */
const causeChain = (error: unknown): string => {
  const messages: Array<string> = []
  for (let at = error; at instanceof Error || (typeof at === "object" && at !== null && "cause" in at); ) {
    if (at instanceof Error && at.message.length > 0) messages.push(at.message)
    at = (at as { readonly cause?: unknown }).cause
  }
  return messages.join(": ")
}

/**
 * Bad flags exit 2; anything the service or the connection refused exits 1. When nothing answered,
 * the line says where the CLI looked and which setting moves it.
 */
const toLine = (
  error: unknown,
  service: string
): { readonly exitCode: number; readonly body: Record<string, unknown> } => {
  if (CliError.isCliError(error))
    return { exitCode: 2, body: { error: "InvalidArguments", message: usage(error) } }
  if (error instanceof RpcClientError) {
    const message = causeChain(error.reason)
    const unreachable = /fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET/.test(message)
    return {
      exitCode: 1,
      body: {
        error: "RpcClientError",
        message,
        ...(unreachable
          ? {
              service,
              hint: `No service answered at ${service}. Start it (npm start), or set SVC_BASE_URL to its address (unset, the CLI looks at ${defaultServiceUrl}).`
            }
          : {})
      }
    }
  }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const { _tag, ...fields } = { ...error } as { readonly _tag: unknown }
    const message = error instanceof Error ? error.message : undefined
    return {
      exitCode: _tag === "UsageError" ? 2 : 1,
      body: {
        error: _tag === "UsageError" ? "InvalidArguments" : _tag,
        ...(message ? { message } : {}),
        ...fields
      }
    }
  }
  return { exitCode: 1, body: { error: "Failed", message: String(error) } }
}

/** Help and version go to stdout as usual; invocation errors are ours to render, as JSON. */
const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation" || (event._tag === "Help" && event.reason === "Implicit")
      ? Effect.void
      : CliOutput.defaultPresenter.present(event)
})

Command.run(cli, { version: "0.1.0", renderErrors: false }).pipe(
  Effect.catchCause((cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    return Effect.flatMap(
      Effect.orElseSucceed(serviceUrl, () => defaultServiceUrl),
      (service) => {
        const { exitCode, body } = toLine(Cause.squash(cause), service)
        return Console.error(JSON.stringify(body)).pipe(
          Effect.andThen(Effect.fail(new Reported({ exitCode })))
        )
      }
    )
  }),
  Effect.provide(Layer.mergeAll(NodeServices.layer, presenter)),
  NodeRuntime.runMain
)
