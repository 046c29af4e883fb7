import { setTimeout as sleep } from "node:timers/promises"
import type { FaultsPatch } from "../../src/contract/faults.ts"
import { type Cluster, type Instance, postgresCluster, restartPostgres } from "./cluster.ts"
import type { Random } from "./options.ts"

const calm: typeof FaultsPatch.Type = {
  errorRate: 0,
  outage: false,
  latencyMs: { min: 0, max: 0 },
  paused: []
}

export interface ChaosEvent {
  /** Seconds since the load began. */
  readonly at: number
  readonly what: string
}

/**
 * One cycle of about 45 s, repeated until the load ends (a step under way always finishes, so a
 * stalled instance is always resumed): upstream errors, kill -9 and restart, a stall past the
 * lease, a latency spike, another stall (of the next instance), an outage or a paused platform,
 * and with --restart-postgres a PostgreSQL restart. The instances hit rotate from cycle to cycle.
 */
export const runChaos = (options: {
  readonly cluster: Cluster
  readonly leaseSeconds: number
  readonly restartPostgres: boolean
  readonly pgCluster: string | undefined
  readonly pgUrl: string
  readonly random: Random
  readonly until: number
  readonly begun: number
  readonly log: (line: string) => void
}) => {
  const { cluster, random } = options
  const events: Array<ChaosEvent> = []
  const note = (what: string) => {
    const at = (performance.now() - options.begun) / 1000
    events.push({ at, what })
    options.log(`chaos +${at.toFixed(1)} s: ${what}`)
  }
  const open = () => Date.now() < options.until
  const pause = async (seconds: number) => {
    const end = Math.min(options.until, Date.now() + seconds * 1000)
    while (Date.now() < end) await sleep(Math.min(250, end - Date.now()))
  }
  const lease = options.leaseSeconds
  const n = cluster.instances.length
  const pg = new URL(options.pgUrl)

  const upstreamFault = async (name: string, patch: typeof FaultsPatch.Type, seconds: number) => {
    note(`upstream ${name} for ${seconds} s`)
    await cluster.faults(patch)
    await pause(seconds)
    await cluster.faults(calm)
  }

  const killAndRestart = async (instance: Instance) => {
    // Slow upstream calls first, so the instance surely dies holding claims and reservations.
    await cluster.faults({ latencyMs: { min: 300, max: 1500 } })
    await sleep(1000)
    const pid = instance.service.pid
    await cluster.kill9(instance)
    note(`kill -9 instance ${instance.index + 1} (pid ${pid}), upstream latency 300-1500 ms`)
    await cluster.faults(calm)
    await sleep(1500)
    const begun = performance.now()
    const newPid = await cluster.restart(instance)
    note(
      `instance ${instance.index + 1} restarted (pid ${newPid}, ready in ${((performance.now() - begun) / 1000).toFixed(1)} s)`
    )
  }

  const stallPastLease = async (instance: Instance) => {
    // Slow upstream calls first, so the instance surely stalls holding claims and reservations.
    const slow = { min: 1000, max: Math.max(1500, Math.min(4000, (lease - 1) * 1000)) }
    await cluster.faults({ latencyMs: slow })
    await sleep(1000)
    cluster.stall(instance)
    note(
      `SIGSTOP instance ${instance.index + 1} (pid ${instance.service.pid}) for ${lease + 3} s, upstream latency ${slow.min}-${slow.max} ms`
    )
    await sleep((lease + 3) * 1000)
    // The upstream recovers as the instance wakes: its stalled calls finish (or fail) at once,
    // while the retries that took their keys over elsewhere are still in their slow calls.
    await cluster.faults(calm)
    cluster.resume(instance)
    note(`SIGCONT instance ${instance.index + 1}, upstream latency back to 0`)
    await sleep(2000)
  }

  // The instance killed in a cycle, then the two stalled after it (with two instances, each once).
  const target = (cycle: number, offset: number) => cluster.instances[(cycle + offset) % n]!
  let first = 0
  const steps: ReadonlyArray<(cycle: number) => Promise<void>> = [
    async () => {
      first = random.int(n)
      await pause(2)
    },
    () => upstreamFault("error rate 30%", { errorRate: 0.3 }, 4),
    (cycle) => killAndRestart(target(cycle, first)),
    () => pause(2),
    (cycle) => stallPastLease(target(cycle, first + 1)),
    () => upstreamFault("latency 100-1000 ms", { latencyMs: { min: 100, max: 1000 } }, 4),
    (cycle) => stallPastLease(target(cycle, first + 2)),
    (cycle) =>
      cycle % 2 === 0
        ? upstreamFault("outage", { outage: true }, 2)
        : upstreamFault("forum paused", { paused: ["forum"] }, 3),
    async () => {
      if (!options.restartPostgres) return
      const target = postgresCluster(options.pgCluster)
      note(`restart PostgreSQL ${target.version}/${target.name}`)
      const seconds = await restartPostgres(target, pg.hostname, pg.port || "5432")
      note(`PostgreSQL accepts connections again (${seconds.toFixed(1)} s)`)
      await pause(2)
    }
  ]

  const done = (async () => {
    for (let cycle = 0; open(); cycle++) {
      for (const step of steps) {
        if (!open()) break
        await step(cycle)
      }
    }
    await cluster.faults(calm)
  })()
  return { done, events }
}
