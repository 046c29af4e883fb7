import { execFileSync } from "node:child_process"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { sampleArguments } from "../mcp/samples.ts"
import { TestApp, testApp } from "../support/app.ts"
import { freshHome, pinnedNode, start, svcMain } from "./run.ts"

/** util-linux `script` gives the command a pseudo-terminal (stdout and stderr then share it). */
const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`

/** `svc args` in a pseudo-terminal; the transcript is what a person would see. */
const inTerminal = (
  args: ReadonlyArray<string>,
  env: { baseUrl: string; home: string; extra?: Record<string, string> }
) =>
  Effect.promise(
    () =>
      start(["-qefc", [pinnedNode, svcMain, ...args].map(quote).join(" "), "/dev/null"], env, ["script"]).done
  )

/** Bold, dim or red: the SGR codes `src/clients/customer-cli/output.ts` writes (built with `RegExp`, the lint refuses ESC in a literal). */
const colours = new RegExp(`${String.fromCharCode(27)}\\[(1|2|31)m`)

describe.skipIf(!hasScript)("the svc command line in a pseudo-terminal", () => {
  layer(testApp(operations), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("colours a terminal's output, and not with NO_COLOR", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const env = { baseUrl: app.url, home: freshHome(), extra: { TERM: "xterm" } }
        const init = yield* inTerminal(["init"], env)
        assert.strictEqual(init.code, 0, init.stdout)
        assert.include(init.stdout, "Minted a free trial key")
        const slug = sampleArguments.getProfile!.identifier as string
        const coloured = yield* inTerminal(["profnet", "profile", slug], env)
        assert.strictEqual(coloured.code, 0, coloured.stdout)
        assert.include(coloured.stdout, slug)
        assert.match(coloured.stdout, colours)
        assert.match(coloured.stdout, /receipt rcpt_/)
        const plain = yield* inTerminal(["profnet", "profile", slug], {
          ...env,
          extra: { ...env.extra, NO_COLOR: "1" }
        })
        assert.strictEqual(plain.code, 0, plain.stdout)
        assert.include(plain.stdout, slug)
        assert.notMatch(plain.stdout, colours)
        const payment = yield* inTerminal(["profnet", "profile", slug, "--realtime"], env)
        assert.strictEqual(payment.code, 3, payment.stdout)
      })
    )
  })
})
