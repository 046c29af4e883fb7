import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { freePort, liveCall, paidKey, type Service, startService } from "./service.ts"

const store = process.env.TEST_DATABASE_URL === undefined ? "PGlite" : "PostgreSQL"
const metricsToken = "ops-test-metrics-token-2d7a5f9c1e8b4a6d3f"
const cleanups: Array<() => void> = []
afterAll(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Debian's Prometheus with a config of its own on a free port, scraping `target` every second. */
const startPrometheus = async (target: string, bearer: string | undefined) => {
  const dir = mkdtempSync(join(tmpdir(), "svc-prometheus-"))
  const port = await freePort()
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global:",
      "  scrape_interval: 1s",
      "scrape_configs:",
      "  - job_name: svc",
      "    scrape_interval: 1s",
      "    metrics_path: /metrics",
      ...(bearer === undefined ? [] : ["    authorization:", `      credentials: ${bearer}`]),
      "    static_configs:",
      `      - targets: ["${target}"]`,
      ""
    ].join("\n")
  )
  const child: ChildProcess = spawn(
    "/usr/bin/prometheus",
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`
    ],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  let output = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString()
  })
  cleanups.push(() => {
    child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })
  const base = `http://127.0.0.1:${port}`
  /** The series of an instant query, once Prometheus has one (or after 30 seconds, none). */
  const query = async (promql: string) => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const answer = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`).then(
        (reply) =>
          reply.json() as Promise<{
            data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
          }>,
        () => undefined
      )
      const result = answer?.data?.result ?? []
      if (result.length > 0 || Date.now() > deadline) return result
      await sleep(500)
    }
  }
  const targetHealth = async () => {
    const reply = (await (await fetch(`${base}/api/v1/targets`)).json()) as {
      data: { activeTargets: Array<{ health: string; lastError: string }> }
    }
    return reply.data.activeTargets[0]
  }
  return { query, targetHealth, output: () => output }
}

const started: Array<Service> = []
afterAll(() => {
  for (const service of started.splice(0)) service.stop()
})

describe(`GET /metrics scraped by Prometheus (${store})`, { timeout: 120_000 }, () => {
  it("behind METRICS_TOKEN: refused without it, scraped by a real Prometheus with it, series queryable", async () => {
    const service = await startService({ METRICS_TOKEN: metricsToken })
    started.push(service)
    const { key } = await paidKey(service.base)
    const call = await liveCall(service.base, key, `metrics-${Date.now()}`)
    assert.strictEqual(call.status, 200)

    assert.strictEqual((await fetch(`${service.base}/metrics`)).status, 401)
    const wrong = await fetch(`${service.base}/metrics`, { headers: { authorization: "Bearer nope" } })
    assert.strictEqual(wrong.status, 401)
    // METRICS_TOKEN replaces the admin token here.
    const admin = await fetch(`${service.base}/metrics`, {
      headers: { authorization: "Bearer ops-test-admin-token-5e9b2c7f1a4d8e3b6c" }
    })
    assert.strictEqual(admin.status, 401)
    const page = await fetch(`${service.base}/metrics`, {
      headers: { authorization: `Bearer ${metricsToken}` }
    })
    assert.strictEqual(page.status, 200)
    assert.match(page.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
    const text = await page.text()
    for (const series of [
      /svc_http_requests_total\{route="\/v1\/profnet\/profiles",method="GET",status="200"\} 1/,
      /svc_http_request_duration_seconds_bucket\{route="\/v1\/profnet\/profiles",method="GET",status="200",le="\+Inf"\} 1/,
      /svc_http_requests_total\{route="\/metrics",method="GET",status="401"\} [1-9]/,
      /svc_metered_calls_total\{operation="getProfile",outcome="ok"\} 1/,
      /svc_credits_charged_total\{platform="profnet",source="balance"\} [1-9]/,
      /svc_cache_lookups_total\{result="miss"\} 1/,
      /svc_upstream_requests_total\{platform="profnet",outcome="ok"\} 1/,
      /svc_upstream_circuit_open\{platform="profnet"\} 0/,
      /svc_reservations_open 0/,
      /svc_mail_outbox_backlog \d+/,
      /svc_webhook_backlog 0/,
      /svc_process_resident_memory_bytes \d+/,
      /svc_event_loop_delay_seconds\{quantile="0\.99"\} [\d.e-]+/,
      /svc_draining 0/
    ])
      assert.match(text, series)
    assert.notInclude(text, key, "no secret on the page")
    if (process.env.TEST_DATABASE_URL !== undefined)
      assert.match(text, /svc_db_connections\{state="[a-z ]+"\} \d+/)

    const prometheus = await startPrometheus(`127.0.0.1:${service.port}`, metricsToken)
    const result = await prometheus.query(
      'svc_http_requests_total{route="/v1/profnet/profiles",status="200"}'
    )
    assert.lengthOf(result, 1, prometheus.output())
    assert.strictEqual(result[0]!.value[1], "1")
    assert.strictEqual(result[0]!.metric.job, "svc")
    const charged = await prometheus.query('sum by (source) (svc_credits_charged_total{platform="profnet"})')
    assert.strictEqual(charged[0]?.metric.source, "balance")
    assert.strictEqual((await prometheus.targetHealth())?.health, "up")
  })

  it("METRICS_PORT: served there without auth, and not on PORT", async () => {
    const metricsPort = await freePort()
    const service = await startService({ METRICS_PORT: String(metricsPort) })
    started.push(service)
    assert.strictEqual(
      (
        await fetch(`${service.base}/metrics`, {
          headers: { authorization: "Bearer ops-test-admin-token-5e9b2c7f1a4d8e3b6c" }
        })
      ).status,
      404
    )
    const prometheus = await startPrometheus(`127.0.0.1:${metricsPort}`, undefined)
    const result = await prometheus.query("svc_process_resident_memory_bytes")
    assert.lengthOf(result, 1, prometheus.output())
    assert.isAbove(Number(result[0]!.value[1]), 0)
    assert.strictEqual((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status, 404)
  })
})
