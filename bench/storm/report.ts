import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { table } from "../report.ts"
import type { ChaosEvent } from "./chaos.ts"
import type { StormCheck } from "./checks.ts"
import { describe, type LogicalCall, type Phase } from "./clients.ts"

/** "200 x3012, 429 CONCURRENCY_LIMIT x40": counts, most frequent first. */
const tally = (items: ReadonlyArray<string>): string => {
  const counts = new Map<string, number>()
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1)
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([item, n]) => `${item} x${n}`)
    .join(", ")
}

export interface StormSummary {
  readonly header: string
  readonly leaseNote: string
  readonly events: ReadonlyArray<ChaosEvent>
  readonly calls: ReadonlyArray<LogicalCall>
  readonly loadSeconds: number
  readonly finalReplays: number
  readonly checks: ReadonlyArray<StormCheck>
  readonly logs: ReadonlyArray<string>
}

export const stormReport = (summary: StormSummary): string => {
  const { calls } = summary
  const attempts = calls.flatMap((call) => call.attempts)
  const inPhase = (phase: Phase) => attempts.filter((attempt) => attempt.phase === phase)
  const load = inPhase("load")
  const retried = calls.filter((call) => call.attempts.filter((a) => a.phase === "load").length > 1)
  const crossed = retried.filter(
    (call) => new Set(call.attempts.filter((a) => a.phase === "load").map((a) => a.instance)).size > 1
  )
  const unresolved = calls.filter((call) => call.final === undefined)
  const reconciled = calls.filter((call) => call.attempts.some((a) => a.phase === "reconcile"))
  const statuses = (list: ReadonlyArray<(typeof attempts)[number]>) =>
    tally(list.map((a) => (a.status === 200 && a.replayed === true ? "200 replayed" : describe(a))))
  const lines = [
    summary.header,
    summary.leaseNote,
    "",
    "chaos:",
    ...summary.events.map((event) => `  +${event.at.toFixed(1).padStart(5)} s  ${event.what}`),
    "",
    `load: ${calls.length} logical calls in ${summary.loadSeconds.toFixed(0)} s (${calls.filter((c) => c.kind === "paid").length} paid, ${calls.filter((c) => c.kind === "trial").length} trial), ${load.length} attempts (${(load.length / summary.loadSeconds).toFixed(0)}/s)`,
    `  answers: ${statuses(load)}`,
    `  ${retried.length} calls retried with their key, ${crossed.length} of them on another instance; final: ${tally(calls.map((c) => c.final ?? "none"))}`,
    `  replays right after the 200: ${statuses(inPhase("replay")) || "none"}`,
    `reconcile: ${reconciled.length} calls without a final answer asked again (${statuses(inPhase("reconcile")) || "none"}); ${unresolved.length} still without one`,
    `final replays: ${summary.finalReplays} calls asked again with their key (${statuses(inPhase("final replay")) || "none"})`,
    "",
    table(
      ["", "invariant", "counts"],
      summary.checks.map((check) => [
        check.pass ? "PASS" : "FAIL",
        `${check.group === "ledger" ? "(ledger) " : ""}${check.name}`,
        check.detail
      ]),
      [false, false, false]
    )
  ]
  const failed = summary.checks.filter((check) => !check.pass && check.examples.length > 0)
  for (const check of failed) {
    lines.push("", `FAIL ${check.name}:`, ...check.examples.map((example) => `  - ${example}`))
  }
  lines.push("", ...summary.logs)
  return lines.join("\n")
}

/**
 * Warnings and errors the instances logged (they run with LOG_LEVEL=Warn): how many per log file,
 * then the commonest kinds over all of them, a record being its first line and its indented
 * continuation, with ids and times blanked out.
 */
export const instanceLogs = (dir: string, prefix: string): Array<string> => {
  const kinds = new Map<string, number>()
  const perFile: Array<string> = []
  for (const file of readdirSync(dir)
    .filter((name) => name.startsWith(prefix))
    .sort()) {
    const records: Array<string> = []
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (/^\[[\d:.]+\] /.test(line)) records.push(line)
      else if (/^\s/.test(line) && records.length > 0) records[records.length - 1] += ` ${line.trim()}`
    }
    const loud = records.filter((text) => /^\[[\d:.]+\] (WARN|ERROR|FATAL)/.test(text))
    for (const record of loud) {
      const kind = record
        .replace(/^\[[^\]]*\]\s*/, "")
        .replace(/\(#\d+\)/, "")
        .replace(/\b(rcpt|acct|key|trace)_[A-Za-z0-9]+/g, "$1_*")
        .replace(/\s+/g, " ")
        .slice(0, 200)
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
    }
    perFile.push(`${file.slice(prefix.length - 1)} ${loud.length}`)
  }
  return [
    `instance warnings and errors (${dir}/${prefix}*.log): ${perFile.join(", ")}`,
    ...[...kinds.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([kind, n]) => `  ${n} x ${kind}`)
  ]
}
