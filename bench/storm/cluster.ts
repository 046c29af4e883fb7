import { execFile, execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs"
import { connect } from "node:net"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { promisify } from "node:util"
import type { FaultsPatch } from "../../src/contract/faults.ts"
import { benchDir, freePort, repoRoot, type Started, serviceEnv, startNode } from "../proc.ts"
import { type Service, startService } from "../service.ts"
import { serviceSeed } from "../world.ts"

const run = promisify(execFile)

export type InstanceState = "up" | "killed" | "stopped"

export interface Instance {
  readonly index: number
  readonly port: number
  readonly url: string
  service: Service
  state: InstanceState
  /** How many times it was started (1 = never restarted). */
  starts: number
}

/**
 * N instances of `node src/main.ts` on one PostgreSQL database and one Redis, all with the same
 * admin token and LEASE_SECONDS, and one simulated upstream provider (`src/upstream/server.ts`)
 * whose fault knobs therefore reach every instance at once and survive an instance's restart.
 */
export const startCluster = async (options: {
  readonly stamp: string
  /** The copy of the service every instance (and every restart) runs. */
  readonly app: string
  readonly instances: number
  readonly databaseUrl: string
  readonly redisUrl: string
  readonly leaseSeconds: number
  readonly log: (line: string) => void
  /** More settings of every instance (and every restart). */
  readonly env?: Record<string, string>
}) => {
  const upstreamPort = await freePort()
  const upstream: Started = await startNode({
    label: `storm-${options.stamp}-upstream`,
    args: ["src/upstream/server.ts"],
    cwd: options.app,
    port: upstreamPort,
    readyPath: "/healthz",
    pin: false,
    env: serviceEnv({
      UPSTREAM_PORT: String(upstreamPort),
      UPSTREAM_HOST: "127.0.0.1",
      WORLD_SEED: serviceSeed
    })
  })
  const adminToken = randomBytes(24).toString("hex")
  const launch = (index: number, port: number, starts: number) =>
    startService({
      label: `storm-${options.stamp}-i${index + 1}${starts > 1 ? `-start${starts}` : ""}`,
      store: "postgres",
      databaseUrl: options.databaseUrl,
      port,
      adminToken,
      pin: false,
      cwd: options.app,
      env: {
        REDIS_URL: options.redisUrl,
        UPSTREAM_URL: upstream.url,
        LEASE_SECONDS: String(options.leaseSeconds),
        LOG_LEVEL: "Warn",
        ...options.env
      }
    })
  // The first instance migrates the fresh database alone; the others find it migrated.
  const first = await launch(0, await freePort(), 1)
  const rest = await Promise.all(
    Array.from({ length: options.instances - 1 }, async (_, i) => launch(i + 1, await freePort(), 1))
  )
  const instances: Array<Instance> = [first, ...rest].map((service, index) => ({
    index,
    port: Number(new URL(service.url).port),
    url: service.url,
    service,
    state: "up",
    starts: 1
  }))

  const faults = async (patch: typeof FaultsPatch.Type) => {
    const response = await fetch(`${upstream.url}/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(patch),
      signal: AbortSignal.timeout(5000)
    })
    if (!response.ok) throw new Error(`POST /faults: ${response.status} ${await response.text()}`)
  }

  return {
    instances,
    upstream,
    faults,
    admin: () => (instances.find((instance) => instance.state === "up") ?? instances[0]!).service.admin,
    kill9: async (instance: Instance) => {
      instance.state = "killed"
      instance.service.signal("SIGKILL")
      await instance.service.exited
      await instance.service.stop()
    },
    restart: async (instance: Instance) => {
      instance.starts += 1
      instance.service = await launch(instance.index, instance.port, instance.starts)
      instance.state = "up"
      return instance.service.pid
    },
    stall: (instance: Instance) => {
      instance.state = "stopped"
      instance.service.signal("SIGSTOP")
    },
    resume: (instance: Instance) => {
      instance.service.signal("SIGCONT")
      instance.state = "up"
    },
    stop: async () => {
      for (const instance of instances) if (instance.state === "stopped") instance.service.signal("SIGCONT")
      await Promise.all(instances.map((instance) => instance.service.stop()))
      await upstream.stop()
    }
  }
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>

/**
 * A copy of the service as it is now (src/, migrations/, package.json; node_modules linked), so that
 * every instance and every restart runs the same code while the work tree changes under the run.
 * Returns its directory, the commit it was taken at and whether the work tree differed from it.
 */
export const snapshotApp = (stamp: string) => {
  const dir = join(benchDir, `storm-${stamp}-app`)
  mkdirSync(dir, { recursive: true })
  for (const entry of ["src", "migrations", "package.json"]) {
    cpSync(join(repoRoot, entry), join(dir, entry), { recursive: true })
  }
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"))
  const git = (...args: Array<string>) => {
    try {
      return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim()
    } catch {
      return ""
    }
  }
  return {
    dir,
    commit: git("rev-parse", "--short", "HEAD") || "unknown",
    dirty: git("status", "--porcelain", "--", "src", "migrations", "package.json").length > 0,
    remove: async () => rmSync(dir, { recursive: true, force: true })
  }
}

/** `<version>/main` of the first cluster under /etc/postgresql, unless one is named. */
export const postgresCluster = (named: string | undefined): { version: string; name: string } => {
  if (named !== undefined) {
    const [version, name] = named.split("/")
    return { version: version!, name: name! }
  }
  const version = readdirSync("/etc/postgresql").sort()[0]
  if (version === undefined) throw new Error("no PostgreSQL cluster under /etc/postgresql")
  return { version, name: "main" }
}

/** Restarts the cluster and waits until it accepts connections again; returns the seconds it took. */
export const restartPostgres = async (
  cluster: { version: string; name: string },
  host: string,
  port: string
) => {
  const begun = performance.now()
  await run("pg_ctlcluster", ["--skip-systemctl-redirect", cluster.version, cluster.name, "restart"], {
    timeout: 120_000
  })
  for (let i = 0; i < 60; i++) {
    try {
      await run("pg_isready", ["-q", "-h", host, "-p", port], { timeout: 5000 })
      break
    } catch {
      await sleep(500)
    }
  }
  return (performance.now() - begun) / 1000
}

/** PING over RESP: the storm refuses to start without the Redis it is told to share. */
export const pingRedis = (url: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const parsed = new URL(url)
    const socket = connect({ host: parsed.hostname, port: Number(parsed.port || 6379) })
    const fail = (why: string) => {
      socket.destroy()
      reject(new Error(`Redis at ${url}: ${why}`))
    }
    socket.setTimeout(3000, () => fail("no answer to PING"))
    socket.once("error", (error) => fail(error.message))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => {
      socket.end()
      if (data.toString().startsWith("+PONG")) resolve()
      else fail(`answered ${JSON.stringify(data.toString().trim())}`)
    })
  })
