import { Cause, Config, Effect, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { AppConfig } from "./config.ts"
import { mcpMounts } from "./contract/mcpMounts.ts"
import { describeStore } from "./logging.ts"
import { DataDirLocked, DataDirUnusable } from "./store/DataDirLock.ts"

/** A provider URL as it may be logged: without user or password. */
const withoutCredentials = (text: string) => {
  if (!URL.canParse(text)) return text
  const url = new URL(text)
  url.username = ""
  url.password = ""
  return url.toString()
}

/** Where data comes from: the provider(s) of `UPSTREAM_URL*`, or the simulated world of `WORLD_SEED`. */
const describeUpstream = Effect.gen(function* () {
  const urls = yield* Effect.all(
    ["UPSTREAM_URL", "UPSTREAM_URL_PROFNET", "UPSTREAM_URL_FORUM", "UPSTREAM_URL_MICROBLOG"].map((name) =>
      Effect.map(
        Config.option(Config.NonEmptyString(name)),
        Option.map((url) => `${name}=${withoutCredentials(url)}`)
      )
    )
  )
  const set = urls.flatMap(Option.toArray)
  if (set.length > 0) return `provider ${set.join(", ")}`
  return `simulated world ${yield* Config.String("WORLD_SEED").pipe(Config.withDefault("svc-world-1"))}`
})

/**
 * The one start line: address, store (never a password), upstream, MCP mounts, and how long after
 * Node started the service was ready.
 */
export const logStarted = Effect.gen(function* () {
  const config = yield* AppConfig
  const server = yield* HttpServer.HttpServer
  const address = server.address
  const listening = "port" in address ? `http://${config.host}:${address.port}` : "a unix socket"
  const store = describeStore(Option.map(config.databaseUrl, Redacted.value), config.dataDir)
  yield* Effect.logInfo(
    `listening on ${listening} (public ${config.baseUrl}); store: ${store}; upstream: ${yield* describeUpstream}; MCP: ${mcpMounts.map((mount) => mount.path).join(", ")}; ready ${process.uptime().toFixed(1)} s after Node started`
  )
})

interface Failure {
  readonly code?: string
  readonly message?: string
  readonly cause?: unknown
  readonly _tag?: string
}

/** The error and the errors it was caused by, outermost first. */
const chain = (error: unknown): ReadonlyArray<Failure> => {
  const found: Array<Failure> = []
  let current = error
  while (typeof current === "object" && current !== null && found.length < 8) {
    found.push(current as Failure)
    current = (current as Failure).cause
  }
  return found
}

/** One sentence for why the service did not start, naming what to change. */
export const explainStartupFailure = (
  cause: Cause.Cause<unknown>,
  config: {
    readonly port: string
    readonly host: string
    readonly store: string
  }
): string => {
  const error = Cause.squash(cause)
  if (error instanceof DataDirLocked || error instanceof DataDirUnusable) return error.message
  const errors = chain(error)
  const has = (predicate: (failure: Failure) => boolean) => errors.some(predicate)
  if (has((e) => e._tag === "ConfigError"))
    return `The configuration is invalid: ${errors[1]?.message ?? (error as Failure).message}.`
  if (has((e) => e.code === "EADDRINUSE"))
    return `Port ${config.port} on ${config.host} is already in use: stop the other process or set PORT to a free port.`
  if (has((e) => e.code === "EACCES" || e.code === "EADDRNOTAVAIL"))
    return `Cannot listen on ${config.host}:${config.port}: check HOST and PORT.`
  if (has((e) => e._tag === "ConnectionError" || e.code === "ECONNREFUSED" || e.code === "ENOTFOUND"))
    return `Cannot reach the database (${config.store}): is it running, and is DATABASE_URL right?`
  if (has((e) => e._tag === "AuthenticationError"))
    return `The database refused the credentials of DATABASE_URL (${config.store}).`
  const last = errors.at(-1)
  return `The service could not start: ${last?.message ?? String(error)}`
}
