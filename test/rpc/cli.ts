import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"

const main = fileURLToPath(new URL("../../src/clients/operator-cli/main.ts", import.meta.url))

export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the real CLI in a child process on this Node, with `env` added to the environment. */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.callback<CliRun>((resume) => {
    const child = execFile(
      process.execPath,
      [main, ...args],
      { env: { ...process.env, ...env }, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
    return Effect.sync(() => child.kill())
  })
