/**
 * `npm run test:mcp-conformance`: the official MCP conformance suite against `/mcp` of a freshly
 * started service (PGlite in memory, free port, simulated upstream), authenticated with a minted key.
 * Exits non-zero when a scenario has a failure not listed in `conformance-baseline.yaml`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { createServer, request, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { toolPath } from "../support/tools.ts"

/** The scenarios that apply to a tools-only, stateless, key-authenticated server, at each wire they exist for. */
const scenarios: ReadonlyArray<{ readonly name: string; readonly spec: "2025-11-25" | "2026-07-28" }> = [
  { name: "server-initialize", spec: "2025-11-25" },
  { name: "server-session-lifecycle", spec: "2025-11-25" },
  { name: "ping", spec: "2025-11-25" },
  { name: "tools-list", spec: "2025-11-25" },
  { name: "dns-rebinding-protection", spec: "2025-11-25" },
  { name: "server-stateless", spec: "2026-07-28" },
  { name: "tools-list", spec: "2026-07-28" },
  { name: "dns-rebinding-protection", spec: "2026-07-28" },
  { name: "http-header-validation", spec: "2026-07-28" },
  { name: "server-sse-multiple-streams", spec: "2026-07-28" },
  { name: "caching", spec: "2026-07-28" },
  { name: "input-required-result-unsupported-methods", spec: "2026-07-28" }
]

const here = import.meta.dirname
const root = join(here, "../..")
const suite = toolPath("@modelcontextprotocol/conformance/dist/index.js")
const baseline = join(here, "conformance-baseline.yaml")

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  )

const freePort = async () => {
  const probe = createServer()
  const port = await listen(probe)
  await new Promise((resolve) => probe.close(resolve))
  return port
}

const startService = (port: number) => {
  let output = ""
  const child = spawn(process.execPath, [join(root, "src/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: ":memory:",
      HOST: "127.0.0.1",
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      ADMIN_TOKEN: randomBytes(24).toString("hex"),
      LOG_LEVEL: "Warn"
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  return { child, output: () => output }
}

const waitUntilReady = async (url: string, child: ChildProcess, seconds: number) => {
  for (let i = 0; i < seconds * 4; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited with code ${child.exitCode}`)
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false
    )
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`the service was not ready within ${seconds} s`)
}

/**
 * The suite has no option for request headers, and it talks to the server three ways (the MCP
 * SDK's fetch, undici, node:http). So it talks to this proxy, which adds the key as a gateway
 * would and forwards everything else untouched, `Host` and `Origin` included.
 */
const authenticatingProxy = (target: number, authorization: string) =>
  createServer((incoming, outgoing) => {
    const forwarded = request(
      {
        host: "127.0.0.1",
        port: target,
        method: incoming.method,
        path: incoming.url,
        headers: { authorization, ...incoming.headers }
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(outgoing)
      }
    )
    forwarded.on("error", () => outgoing.destroy())
    outgoing.on("close", () => forwarded.destroy())
    incoming.pipe(forwarded)
  })

const runScenario = (url: string, scenario: (typeof scenarios)[number], outputDir: string) =>
  new Promise<{ readonly code: number; readonly log: string }>((resolve) => {
    const args = [suite, "server", "--url", url, "--scenario", scenario.name, "--spec-version", scenario.spec]
    const child = spawn(process.execPath, [...args, "--expected-failures", baseline, "-o", outputDir], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let log = ""
    child.stdout.on("data", (chunk) => (log += chunk))
    child.stderr.on("data", (chunk) => (log += chunk))
    child.on("close", (code) => resolve({ code: code ?? 1, log }))
  })

const checksIn = async (dir: string): Promise<ReadonlyArray<{ readonly status: string }>> => {
  const entries = await readdir(dir, { recursive: true })
  const file = entries.find((entry) => entry.endsWith("checks.json"))
  return file === undefined ? [] : JSON.parse(await readFile(join(dir, file), "utf8"))
}

const main = async () => {
  const port = await freePort()
  const service = startService(port)
  let proxy: Server | undefined
  try {
    await waitUntilReady(`http://127.0.0.1:${port}/readyz`, service.child, 120)
    const minted = await fetch(`http://127.0.0.1:${port}/v1/keys/mint`, { method: "POST" })
    const { key } = (await minted.json()) as { key: string }
    proxy = authenticatingProxy(port, `Bearer ${key}`)
    const url = `http://127.0.0.1:${await listen(proxy)}/mcp`
    console.log(`MCP conformance suite against ${url} (a trial key added, forwarded to :${port})`)

    const rows: Array<string> = []
    let failed = 0
    for (const scenario of scenarios) {
      const outputDir = await mkdtemp(join(tmpdir(), "mcp-conformance-"))
      const { code, log } = await runScenario(url, scenario, outputDir)
      const checks = await checksIn(outputDir)
      await rm(outputDir, { recursive: true, force: true })
      const count = (status: string) => checks.filter((check) => check.status === status).length
      if (code !== 0) {
        failed++
        console.log(log)
      }
      const expected = log.includes("Expected failures") ? ", expected failures in baseline" : ""
      rows.push(
        `${code === 0 ? "ok  " : "FAIL"} ${scenario.name.padEnd(42)} ${scenario.spec}  ${count("SUCCESS")} passed, ${count("FAILURE")} failed, ${count("WARNING")} warnings, ${count("INFO")} info${expected}`
      )
    }
    console.log(`\nSummary\n${rows.join("\n")}`)
    console.log(failed === 0 ? "\nAll scenarios conform." : `\n${failed} scenario(s) failed.`)
    if (failed > 0) process.exitCode = 1
  } catch (error) {
    console.error(String(error), "\n", service.output())
    process.exitCode = 1
  } finally {
    proxy?.close()
    service.child.kill("SIGTERM")
  }
}

await main()
