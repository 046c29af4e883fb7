import { readFileSync, readlinkSync } from "node:fs"

/**
 * What a process's resident memory is made of, from its mappings in `/proc/<pid>/smaps`: the peak
 * RSS the bench reports says how much, this says whose, so that a round on the memory targets
 * starts from the parts rather than from a scratch probe (docs/performance.md, round 30).
 *
 * - Node's binary: pages of the executable itself (file-backed; round 14).
 * - malloc: glibc's main heap (`[heap]`) and the arenas of other threads, each a 64 MiB-aligned
 *   mapping whose reservation (its read-write part and the inaccessible rest after it) is 64 MiB.
 * - WebAssembly memory: a read-write mapping with V8's guard region after it, an inaccessible
 *   reservation of more than 4 GiB (PGlite's database memory; undici's parser's, a few KB).
 * - compiled code: anonymous executable mappings (V8's code space, JavaScript's and WebAssembly's).
 * - V8's heap and the rest: every other anonymous mapping (V8's heap pages, buffers, stacks).
 * - other files: shared libraries and any other file mapped.
 */
export const memoryParts = [
  "Node's binary",
  "malloc",
  "WebAssembly memory",
  "compiled code",
  "V8's heap and the rest",
  "other files"
] as const

export type MemoryPart = (typeof memoryParts)[number]

/** Resident MiB by part; every part present, zero when nothing of it is resident. */
export type ResidentParts = Readonly<Record<MemoryPart, number>>

interface Mapping {
  readonly start: number
  readonly end: number
  readonly perms: string
  readonly path: string
  rssKb: number
}

const mib = 1024 * 1024
const arenaSize = 64 * mib
const guardOver = 4096 * mib

const mappingsOf = (smaps: string): ReadonlyArray<Mapping> => {
  const mappings: Array<Mapping> = []
  for (const line of smaps.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (head !== null) {
      mappings.push({
        start: Number.parseInt(head[1]!, 16),
        end: Number.parseInt(head[2]!, 16),
        perms: head[3]!,
        path: head[4]!.trim(),
        rssKb: 0
      })
      continue
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    const last = mappings.at(-1)
    if (rss !== null && last !== undefined) last.rssKb = Number(rss[1])
  }
  return mappings
}

/** The part a mapping's pages belong to, given the one after it (for the reservations that follow). */
const partOf = (mapping: Mapping, next: Mapping | undefined, executable: string): MemoryPart => {
  if (mapping.path === executable) return "Node's binary"
  if (mapping.path === "[heap]") return "malloc"
  if (mapping.path.startsWith("/")) return "other files"
  if (mapping.path !== "") return "V8's heap and the rest"
  if (mapping.perms.includes("x")) return "compiled code"
  const reserved =
    next !== undefined && next.start === mapping.end && next.perms === "---p" && next.path === ""
  const reservationEnd = reserved ? next.end : mapping.end
  if (mapping.start % arenaSize === 0 && reservationEnd - mapping.start === arenaSize) return "malloc"
  if (reserved && next.end - next.start > guardOver) return "WebAssembly memory"
  return "V8's heap and the rest"
}

/** The resident MiB of each part, from the text of `/proc/<pid>/smaps` and the path of the process's executable. */
export const residentParts = (smaps: string, executable: string): ResidentParts => {
  const kb = Object.fromEntries(memoryParts.map((part) => [part, 0])) as Record<MemoryPart, number>
  const mappings = mappingsOf(smaps)
  mappings.forEach((mapping, i) => {
    kb[partOf(mapping, mappings[i + 1], executable)] += mapping.rssKb
  })
  return Object.fromEntries(memoryParts.map((part) => [part, kb[part] / 1024])) as ResidentParts
}

/** The resident parts of a live process; undefined where `/proc` cannot be read (not Linux, or it exited). */
export const residentPartsOf = (pid: number): ResidentParts | undefined => {
  try {
    return residentParts(readFileSync(`/proc/${pid}/smaps`, "utf8"), readlinkSync(`/proc/${pid}/exe`))
  } catch {
    return undefined
  }
}

/** One line of the report: the parts in MiB, largest first, the empty ones left out. */
export const residentPartsLine = (parts: ResidentParts): string =>
  memoryParts
    .filter((part) => parts[part] >= 0.5)
    .sort((a, b) => parts[b] - parts[a])
    .map((part) => `${part} ${parts[part].toFixed(0)}`)
    .join(", ")
