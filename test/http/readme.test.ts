import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { operations } from "../../src/operations/registry.ts"
import { layerWorld, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { codeIn } from "../identity/support.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/**
 * The README's walk-throughs run as written: its code blocks are taken from README.md itself and
 * run against a test service (curl and the operator CLI in bash, the SDK snippet in Node), with
 * only the service's address (and the emailed code, which a person reads from the outbox) put in.
 */
const root = fileURLToPath(new URL("../../", import.meta.url))
const readme = readFileSync(`${root}README.md`, "utf8")

/** The first ```lang block after the heading. */
const blockAfter = (heading: string, lang: string) => {
  const at = readme.indexOf(`\n${heading}\n`)
  assert.isAbove(at, -1, `README has "${heading}"`)
  const open = readme.indexOf(`\n\`\`\`${lang}\n`, at)
  const start = open + `\n\`\`\`${lang}\n`.length
  return readme.slice(start, readme.indexOf("\n```", start))
}

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = (file: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.callback<Run>((resume) => {
    const child = execFile(
      file,
      args,
      { cwd: root, env: { ...process.env, ...env }, timeout: 60_000, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(
          Effect.succeed({
            code: error === null ? 0 : typeof error.code === "number" ? error.code : -1,
            stdout,
            stderr
          })
        )
    )
    return Effect.sync(() => child.kill())
  })

/**
 * A bash script's run; its stderr goes to a file (a script may write to /dev/stderr, which a
 * child's stderr socket does not open), read back as `stderr`.
 */
const bash = (script: string, env: Record<string, string>) => {
  const dir = mkdtempSync(`${tmpdir()}/readme-`)
  return Effect.map(run("bash", ["-c", `exec 2>${dir}/stderr\n${script}`], env), (ran) => {
    const stderr = readFileSync(`${dir}/stderr`, "utf8")
    rmSync(dir, { recursive: true, force: true })
    return { ...ran, stderr }
  })
}

describe(`the README's walk-throughs, as written (${storeName})`, () => {
  // The service's default world (WORLD_SEED unset), whose identifiers the README names.
  const defaultWorld = layerWorld("svc-world-1").pipe(Layer.provideMerge(UpstreamFaults.layer))
  layer(testApp(operations, {}, defaultWorld), { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect(
      "curl's walk-through, then sign-in claiming the trial key's account, and every management line after it",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const sql = yield* SqlClient.SqlClient
          const env = { SVC_BASE_URL: app.url, SVC_ADMIN_TOKEN: "test-admin-token" }
          const walk = blockAfter("## Walk-through with curl", "sh").replace(
            /^BASE=http:\/\/127\.0\.0\.1:8787$/m,
            `BASE=${app.url}`
          )
          assert.include(walk, `BASE=${app.url}`)
          const signInBlock = blockAfter("## Accounts: sign-in, claim, keys, recovery", "sh")
          const verifyAt = signInBlock.indexOf("TOKEN=$(")
          const beforeVerify = signInBlock.slice(0, verifyAt)
          const fromVerify = signInBlock.slice(verifyAt)
          assert.include(fromVerify, '"code":"123456"')

          // The walk-through mints the key; the sign-in's start sends it, and the outbox shows the code.
          const first = yield* bash(`set -e\n${walk}\n${beforeVerify}\necho "KEY=$KEY"`, env)
          assert.strictEqual(first.code, 0, first.stderr)
          assert.include(first.stdout, '{"status":"ready"}')
          assert.include(first.stdout, '"code":"KEY_REQUIRED"')
          assert.include(first.stdout, '"param":"limit"')
          assert.include(first.stdout, '{"sent":true,"expires_in":600}')
          const key = /^KEY=(svc_\S+)$/m.exec(first.stdout)?.[1]
          assert.isString(key, first.stdout)
          const code = codeIn(first.stdout)
          // The mint's answer went to stderr (`tee /dev/stderr`).
          const accountId = /"account_id":"(acct_\w+)"/.exec(first.stderr)?.[1]
          assert.isString(accountId, first.stderr)
          const minted = { account_id: accountId! }

          // The verify carries the key, so it claims that account; every management line then works.
          const second = yield* bash(`set -e\n${fromVerify.replace('"code":"123456"', `"code":"${code}"`)}`, {
            ...env,
            BASE: app.url,
            KEY: key!
          })
          assert.strictEqual(second.code, 0, second.stderr)
          assert.notInclude(second.stdout, "AUTH_REQUIRED", "one account: the token governs it")
          assert.notInclude(second.stdout, "UNAUTHORIZED")
          assert.include(second.stdout, `"account_id":"${minted!.account_id}"`)
          assert.include(second.stdout, '"label":"ci"')
          assert.include(second.stdout, '"threshold":500')
          const [claimed] = yield* sql<{
            email: string | null
            claimed_at: unknown
          }>`SELECT email, claimed_at FROM accounts WHERE id = ${minted!.account_id}`
          assert.strictEqual(claimed?.email, "me@example.com")
          assert.isNotNull(claimed?.claimed_at)
          const [accounts] = yield* sql<{
            n: unknown
          }>`SELECT count(*) AS n FROM accounts WHERE email = 'me@example.com'`
          assert.strictEqual(Number(accounts?.n), 1, "no second, empty account")
        })
    )

    it.effect("the SDK snippet runs with its import and its key", () =>
      Effect.gen(function* () {
        const app = yield* TestApp
        const { key } = yield* app.mint("10.66.0.1")
        const snippet = blockAfter("## CLI and SDK", "ts").replace("http://127.0.0.1:8787", app.url)
        assert.include(snippet, 'from "svc-data-api/client"')
        assert.include(snippet, app.url)
        // Inside the package, so its own name resolves as an installed copy's would.
        const file = `${root}.readme-sdk-${randomBytes(4).toString("hex")}.ts`
        writeFileSync(file, snippet)
        const ran = yield* run(process.execPath, [file], { SVC_KEY: key }).pipe(
          Effect.ensuring(Effect.sync(() => rmSync(file, { force: true })))
        )
        assert.strictEqual(ran.code, 0, ran.stderr)
        // `console.log(name, charged, key_id)`: the name has spaces of its own.
        const words = ran.stdout.trim().split(" ")
        const [charged, keyId] = words.slice(-2)
        assert.isAbove(words.slice(0, -2).join(" ").length, 0)
        assert.isAbove(Number(charged), 0)
        assert.match(keyId!, /^key_/)
      })
    )

    it.effect("the operator CLI, with no service there, says where it looked and what moves it", () =>
      Effect.gen(function* () {
        const line = readme
          .split("\n")
          .find((text) => text.startsWith("npm run --silent cli -- admin account"))
        assert.isString(line)
        const args = line!.replace(/#.*$/, "").trim().split(/\s+/).slice(5)
        const ran = yield* run("npm", ["run", "--silent", "cli", "--", ...args], {
          SVC_BASE_URL: "http://127.0.0.1:1",
          SVC_ADMIN_TOKEN: "x"
        })
        assert.strictEqual(ran.code, 1, ran.stderr)
        const problem = JSON.parse(ran.stderr.trim().split("\n").pop()!)
        assert.strictEqual(problem.error, "RpcClientError")
        assert.strictEqual(problem.service, "http://127.0.0.1:1")
        assert.include(problem.hint, "SVC_BASE_URL")
        assert.include(problem.hint, "http://127.0.0.1:8787")
      })
    )
  })
})
