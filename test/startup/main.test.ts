import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, assert, describe, it } from "vitest"
import { lockFileName } from "../../src/store/DataDirLock.ts"

/** `node src/main.ts` through the pinned Node (the one npm scripts use), as an operator starts it. */
const node = join(import.meta.dirname, "../../node_modules/.bin/node")
const main = join(import.meta.dirname, "../../src/main.ts")

interface Run {
  readonly child: ChildProcess
  readonly output: () => string
  /** Resolves with the output once `pattern` appears, or rejects when the process exits first. */
  readonly waitFor: (pattern: RegExp) => Promise<string>
  readonly exited: Promise<number | null>
}

const running: Array<ChildProcess> = []
const dirs: Array<string> = []

const start = (env: Record<string, string>): Run => {
  const child = spawn(node, [main], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", TMPDIR: tmpdir(), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  running.push(child)
  let output = ""
  const listeners = new Set<() => void>()
  const append = (chunk: Buffer) => {
    output += chunk.toString()
    for (const listener of listeners) listener()
  }
  child.stdout?.on("data", append)
  child.stderr?.on("data", append)
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output)) resolve(output)
      }
      listeners.add(check)
      check()
      void exited.then((code) => {
        check()
        reject(new Error(`exited ${code} before ${pattern}:\n${output}`))
      })
    })
  return { child, output: () => output, waitFor, exited }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A port another server listens on, and that server (closed by the caller). */
const occupiedPort = async () => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
  const address = blocker.address()
  return { port: typeof address === "object" && address !== null ? address.port : 0, blocker }
}

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-start-"))
  dirs.push(dir)
  return dir
}

const started = /listening on http:\/\/127\.0\.0\.1:\d+/
/** An operator token the service takes (32 random characters at least). */
const operatorToken = "start-test-admin-token-8c1f4e7a2d9b5"

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe("node src/main.ts", { timeout: 90_000 }, () => {
  it("accepts a lower-case LOG_LEVEL and says in one line where it listens, its store, upstream and MCP mounts", async () => {
    const dir = tempDir()
    const port = await freePort()
    const run = start({ LOG_LEVEL: "info", PORT: String(port), DATA_DIR: dir, ADMIN_TOKEN: operatorToken })
    const output = await run.waitFor(started)
    const line = output.split("\n").find((l) => started.test(l)) ?? ""
    assert.include(line, `http://127.0.0.1:${port}`)
    assert.include(line, `store: PGlite in ${dir}`)
    assert.include(line, "upstream: simulated world svc-world-1")
    assert.include(line, "MCP: /mcp, /mcp/profnet, /mcp/forum, /mcp/microblog")
    run.child.kill("SIGTERM")
    await run.exited
    assert.isFalse(existsSync(join(dir, lockFileName)), "the lock is released on exit")
  })

  it("runs from one bundle of its modules, kept in node_modules/.cache/svc-start/bundle", async () => {
    // At Debug a failed start shows its stack trace, whose frames name the file the code runs from.
    const { port, blocker } = await occupiedPort()
    try {
      const run = start({
        LOG_LEVEL: "debug",
        PORT: String(port),
        DATA_DIR: ":memory:",
        ADMIN_TOKEN: operatorToken
      })
      assert.strictEqual(await run.exited, 1)
      const cache = join(import.meta.dirname, "../../node_modules/.cache/svc-start/bundle")
      const manifest = JSON.parse(readFileSync(join(cache, "manifest.json"), "utf8")) as {
        readonly inputs: ReadonlyArray<readonly [string, string]>
      }
      assert.includeMembers(
        manifest.inputs.map(([file]) => file),
        ["src/launch.ts", "src/metering/meterDataCall.ts", "src/store/Database.ts"]
      )
      assert.match(
        run.output(),
        /\n\s+at .*\/node_modules\/\.cache\/svc-start\/bundle\/[^/]+\/launch\.js:\d+/
      )
      assert.notMatch(run.output(), /\n\s+at .*\/src\/[^ ]*\.ts:\d+/, "no frame in a module of src/")
    } finally {
      blocker.close()
    }
  })

  it("LOG_LEVEL=debug adds a line per request: method, path, status, milliseconds, account, receipt", async () => {
    const port = await freePort()
    const run = start({
      LOG_LEVEL: "DEBUG",
      PORT: String(port),
      DATA_DIR: ":memory:",
      ADMIN_TOKEN: operatorToken
    })
    await run.waitFor(started)
    const minted = await fetch(`http://127.0.0.1:${port}/v1/keys/mint`, { method: "POST" })
    const { key, account_id } = (await minted.json()) as { key: string; account_id: string }
    const reply = await fetch(
      `http://127.0.0.1:${port}/v1/profnet/profiles?identifier=richard-lewis-07kvcfn`,
      {
        headers: { authorization: `Bearer ${key}` }
      }
    )
    const receipt = reply.headers.get("x-receipt-id")
    assert.strictEqual(reply.status, 200)
    await run.waitFor(/GET \/v1\/profnet\/profiles 200 \d+ms/)
    assert.match(
      run.output(),
      new RegExp(`GET /v1/profnet/profiles 200 \\d+ms account=${account_id} receipt=${receipt}`)
    )
    assert.match(run.output(), /POST \/v1\/keys\/mint 200 \d+ms account=- receipt=-/)
  })

  it("LOG_FORMAT=json logs one JSON object a line; an unknown LOG_LEVEL stops the start-up in one sentence", async () => {
    const port = await freePort()
    const run = start({
      LOG_FORMAT: "json",
      PORT: String(port),
      DATA_DIR: ":memory:",
      ADMIN_TOKEN: operatorToken
    })
    const output = await run.waitFor(/listening on/)
    const line = output.split("\n").find((l) => l.includes("listening on")) ?? ""
    const parsed = JSON.parse(line)
    assert.strictEqual(parsed.level, "INFO")

    const bad = start({ LOG_LEVEL: "loud", PORT: String(port), DATA_DIR: ":memory:" })
    assert.strictEqual(await bad.exited, 1)
    assert.match(bad.output(), /^The configuration is invalid: LOG_LEVEL must be one of .* got "loud"\.\n$/)
  })

  it("a weak ADMIN_TOKEN or METRICS_TOKEN stops the start-up in one sentence", async () => {
    for (const [env, pattern] of [
      [{ ADMIN_TOKEN: "a" }, /ADMIN_TOKEN is 1 character long; it must be at least 32 random characters/],
      [{ ADMIN_TOKEN: "ab".repeat(20) }, /ADMIN_TOKEN repeats a few characters/],
      [{ ADMIN_TOKEN: operatorToken, METRICS_TOKEN: "short" }, /METRICS_TOKEN is 5 characters long/]
    ] as const) {
      const run = start({ PORT: String(await freePort()), DATA_DIR: ":memory:", ...env })
      assert.strictEqual(await run.exited, 1)
      assert.match(run.output(), new RegExp(`^The configuration is invalid: ${pattern.source}.*\\.\\n$`))
      assert.notMatch(run.output(), /\n\s+at /, "no stack trace")
      assert.notInclude(run.output(), "abab", "the token is never echoed")
    }
  })

  it("a port in use is one sentence and exit code 1, without a stack trace", async () => {
    const { port, blocker } = await occupiedPort()
    try {
      const run = start({ PORT: String(port), DATA_DIR: ":memory:", ADMIN_TOKEN: operatorToken })
      assert.strictEqual(await run.exited, 1)
      assert.include(run.output(), `Port ${port} on 127.0.0.1 is already in use`)
      assert.notMatch(run.output(), /\n\s+at /, "no stack trace")
    } finally {
      blocker.close()
    }
  })

  it("a second instance on the port of a running one does not start (the port's sockets are shared only within one process)", async () => {
    const port = await freePort()
    const first = start({ PORT: String(port), DATA_DIR: ":memory:", ADMIN_TOKEN: operatorToken })
    await first.waitFor(started)
    const second = start({ PORT: String(port), DATA_DIR: ":memory:", ADMIN_TOKEN: operatorToken })
    assert.strictEqual(await second.exited, 1)
    assert.include(second.output(), `Port ${port} on 127.0.0.1 is already in use`)
    const health = await fetch(`http://127.0.0.1:${port}/healthz`)
    assert.strictEqual(health.status, 200, "the first instance still serves")
  })

  it("an unreachable PostgreSQL is one sentence naming host and database, never the password", async () => {
    const port = await freePort()
    const dead = await freePort()
    const run = start({
      PORT: String(port),
      DATABASE_URL: `postgres://svc:hunter2secret@127.0.0.1:${dead}/svcdb`,
      ADMIN_TOKEN: operatorToken
    })
    assert.strictEqual(await run.exited, 1)
    assert.include(run.output(), `Cannot reach the database (PostgreSQL at 127.0.0.1:${dead}/svcdb)`)
    assert.notInclude(run.output(), "hunter2secret")
    assert.notMatch(run.output(), /\n\s+at /, "no stack trace")
  })

  it.skipIf(process.env.TEST_DATABASE_URL === undefined)(
    "on PostgreSQL the start line names host and database, never the password (needs TEST_DATABASE_URL)",
    async () => {
      const url = new URL(process.env.TEST_DATABASE_URL ?? "")
      url.password = "hunter2secret"
      const port = await freePort()
      const run = start({ PORT: String(port), DATABASE_URL: url.toString(), ADMIN_TOKEN: operatorToken })
      const output = await run.waitFor(started)
      assert.include(output, `store: PostgreSQL at ${url.hostname}:${url.port || "5432"}${url.pathname}`)
      assert.notInclude(output, "hunter2secret")
    }
  )

  it("a second process on the same DATA_DIR exits with one sentence before touching it; a dead holder's lock is taken over", async () => {
    const dir = tempDir()
    const first = start({ PORT: String(await freePort()), DATA_DIR: dir, ADMIN_TOKEN: operatorToken })
    await first.waitFor(started)
    const second = start({ PORT: String(await freePort()), DATA_DIR: dir, ADMIN_TOKEN: operatorToken })
    assert.strictEqual(await second.exited, 1)
    assert.strictEqual(
      second.output(),
      `The data directory ${dir} is in use by another process (pid ${first.child.pid}): stop it, or start this one with another DATA_DIR.\n`
    )
    first.child.kill("SIGKILL")
    await first.exited
    // kill -9 leaves the lock behind; its pid is dead, so the next start takes it over.
    assert.isTrue(existsSync(join(dir, lockFileName)))
    const third = start({ PORT: String(await freePort()), DATA_DIR: dir, ADMIN_TOKEN: operatorToken })
    await third.waitFor(started)
  })

  it("a lock naming a live process that is not a service is still honoured (remove the file by hand)", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, lockFileName), `${process.pid}\n`)
    const run = start({ PORT: String(await freePort()), DATA_DIR: dir, ADMIN_TOKEN: operatorToken })
    assert.strictEqual(await run.exited, 1)
    assert.include(run.output(), `is in use by another process (pid ${process.pid})`)
  })
})
