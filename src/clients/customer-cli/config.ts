import { homedir } from "node:os"
import { join } from "node:path"
import { Data, Effect, FileSystem, Schema } from "effect"

/** What `svc` remembers between runs, in `$XDG_CONFIG_HOME/svc/config.json` (mode 0600). */
export const SvcConfig = Schema.Struct({
  base_url: Schema.optionalKey(Schema.String),
  key: Schema.optionalKey(Schema.String),
  /** The key's hint as the service lists it: how `keys rotate` knows it is rotating this key. */
  key_hint: Schema.optionalKey(Schema.String),
  account_id: Schema.optionalKey(Schema.String),
  management_token: Schema.optionalKey(Schema.String),
  token_id: Schema.optionalKey(Schema.String),
  email: Schema.optionalKey(Schema.String),
  /** The accounts the sign-in governs, as it answered. */
  accounts: Schema.optionalKey(Schema.Array(Schema.String))
})
export type SvcConfig = typeof SvcConfig.Type

export const defaultBaseUrl = "http://127.0.0.1:8787"

export class ConfigUnreadable extends Data.TaggedError("ConfigUnreadable")<{ readonly message: string }> {}

export const configDir = () => join(process.env.XDG_CONFIG_HOME || join(homedir(), ".config"), "svc")
export const configPath = () => join(configDir(), "config.json")

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(SvcConfig))

export const readConfig = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = configPath()
  if (!(yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false)))) return {} as SvcConfig
  const text = yield* fs.readFileString(path)
  return yield* decode(text).pipe(
    Effect.mapError(
      () => new ConfigUnreadable({ message: `${path} is not a valid svc config; remove it or fix it.` })
    )
  )
})

/** Writes the config readable by its owner only (it holds a spend key and maybe a management token). */
export const writeConfig = (config: SvcConfig) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(configDir(), { recursive: true, mode: 0o700 })
    const path = configPath()
    yield* fs.writeFileString(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 })
    // `mode` applies only when the file is created; an older file keeps its own.
    yield* fs.chmod(path, 0o600)
  })

export const updateConfig = (change: (config: SvcConfig) => SvcConfig) =>
  Effect.flatMap(readConfig, (config) => writeConfig(change(config)))

/** The service's address: SVC_BASE_URL, else the config's, else the local default. */
export const baseUrlOf = (config: SvcConfig) =>
  (process.env.SVC_BASE_URL || config.base_url || defaultBaseUrl).replace(/\/+$/, "")
