import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"

const root = join(import.meta.dirname, "..", "..")
/** The pinned Node (22), as npm scripts use; `bin/svc.mjs` is tested on its own. */
export const pinnedNode = join(root, "node_modules", ".bin", "node")
export const svcMain = join(root, "src", "clients", "customer-cli", "main.ts")
export const svcBin = join(root, "bin", "svc.mjs")

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface Running {
  readonly stdout: () => string
  readonly stderr: () => string
  readonly done: Promise<Finished>
  readonly kill: () => void
}

/** A fresh config home, so each test starts signed out. */
export const freshHome = () => mkdtempSync(join(tmpdir(), "svc-cli-"))

/**
 * Starts `svc args` piped (not a terminal), against `baseUrl`, with its config under `home`; stdin
 * is empty, or `env.input` when given.
 */
export const start = (
  args: ReadonlyArray<string>,
  env: {
    readonly baseUrl: string
    readonly home: string
    readonly extra?: Record<string, string>
    readonly input?: string
  },
  command: ReadonlyArray<string> = [pinnedNode, svcMain]
): Running => {
  const [file, ...prefix] = command
  const child = spawn(file!, [...prefix, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: env.home,
      XDG_CONFIG_HOME: env.home,
      SVC_BASE_URL: env.baseUrl,
      SVC_NO_BROWSER: "1",
      ...env.extra
    },
    stdio: [env.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
  })
  child.stdin?.end(env.input)
  let stdout = ""
  let stderr = ""
  child.stdout?.on("data", (chunk) => {
    stdout += chunk
  })
  child.stderr?.on("data", (chunk) => {
    stderr += chunk
  })
  const done = new Promise<Finished>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  )
  return { stdout: () => stdout, stderr: () => stderr, done, kill: () => child.kill() }
}

export const svc = (args: ReadonlyArray<string>, env: Parameters<typeof start>[1]) =>
  Effect.promise(() => start(args, env).done)

/** Waits until `read()` matches `pattern` (polling), or fails after `timeoutMs`. */
export const waitFor = (read: () => string, pattern: RegExp, timeoutMs = 20_000) =>
  Effect.promise(
    () =>
      new Promise<RegExpMatchArray>((resolve, reject) => {
        const began = Date.now()
        const tick = () => {
          const match = read().match(pattern)
          if (match) return resolve(match)
          if (Date.now() - began > timeoutMs) return reject(new Error(`no ${pattern} in:\n${read()}`))
          setTimeout(tick, 50)
        }
        tick()
      })
  )
