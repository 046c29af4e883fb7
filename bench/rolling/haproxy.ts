import { spawn } from "node:child_process"
import { mkdirSync, openSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { benchDir, freePort } from "../proc.ts"

export const haproxyPath = "/usr/sbin/haproxy"

/**
 * Debian's haproxy in front of `backends`, as an operator would put it: health checks on /readyz
 * (every 500 ms, down after 2 failures, up after 2 successes), and a request whose connection
 * failed or came back empty tried again on another server (GETs only, which is all the load sends).
 */
export const startHaproxy = async (label: string, backends: ReadonlyArray<{ readonly port: number }>) => {
  const dir = join(benchDir, label)
  mkdirSync(dir, { recursive: true })
  const port = await freePort()
  const config = join(dir, "haproxy.cfg")
  writeFileSync(
    config,
    [
      "global",
      "  maxconn 2000",
      "defaults",
      "  mode http",
      "  timeout connect 2s",
      "  timeout client 60s",
      "  timeout server 60s",
      "  timeout http-keep-alive 10s",
      "  option redispatch",
      "  retries 3",
      "  retry-on conn-failure empty-response",
      `frontend api`,
      `  bind 127.0.0.1:${port}`,
      "  default_backend instances",
      "backend instances",
      "  balance roundrobin",
      "  option httpchk GET /readyz",
      "  http-check expect status 200",
      "  default-server inter 500ms fall 2 rise 2",
      ...backends.map((backend, i) => `  server i${i + 1} 127.0.0.1:${backend.port} check`),
      ""
    ].join("\n")
  )
  const out = openSync(join(dir, "haproxy.log"), "w")
  const child = spawn(haproxyPath, ["-f", config, "-db"], { stdio: ["ignore", out, out] })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    const ok = await fetch(`${url}/readyz`).then(
      (reply) => reply.status === 200,
      () => false
    )
    if (ok) break
    if (child.exitCode !== null || i > 100) throw new Error(`haproxy did not start: see ${dir}/haproxy.log`)
    await sleep(200)
  }
  return {
    url,
    port,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM")
        await exited
      }
    }
  }
}
