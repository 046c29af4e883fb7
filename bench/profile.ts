import { existsSync, readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { repoRoot } from "./proc.ts"

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
    readonly columnNumber?: number
  }
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

export interface Line {
  readonly name: string
  readonly ms: number
  readonly percent: number
}

export interface ProfileSummary {
  readonly file: string
  /** Sampled time inside the window (startup and set-up excluded). */
  readonly totalMs: number
  /** The part of it the process was not idle (waiting for I/O). */
  readonly busyMs: number
  /** Where the samples were taken, by package or folder (self time). */
  readonly byArea: ReadonlyArray<Line>
  /** Functions by self time. */
  readonly topSelf: ReadonlyArray<Line>
  /**
   * Functions of src/ by inclusive time (each sample counted once per function). Only synchronous
   * stacks: an Effect generator's frames sit under the fiber's run loop, not under their callers.
   */
  readonly topSrcInclusive: ReadonlyArray<Line>
}

/**
 * `npm start` runs a bundle of our modules and Effect's (`src/bundledStart.ts`), whose frames all
 * name one file. The bundler writes a source map beside it: a frame is given back the module and
 * line it came from, so the profile still says which package, folder, module and line the time went
 * to. Without the map (a bundle made before maps were written), the bundler's line `// <its path>`
 * at the start of each module's code gives the module, and the line counted from there.
 */
const bundles = new Map<
  string,
  { readonly map: SourceMap | undefined; readonly starts: ReadonlyArray<readonly [number, string]> }
>()

const bundleOf = (url: string) => {
  const known = bundles.get(url)
  if (known !== undefined) return known
  let map: SourceMap | undefined
  let starts: Array<readonly [number, string]> = []
  try {
    const file = fileURLToPath(url)
    if (existsSync(`${file}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")))
    const lines = readFileSync(file, "utf8").split("\n")
    starts = lines.flatMap((line, i) => {
      const marker = /^\/\/ ((?:src|node_modules)\/\S+)$/.exec(line)
      return marker === null ? [] : [[i, marker[1]!] as const]
    })
  } catch {
    // Gone since: the frame keeps the bundle's name.
  }
  const bundle = { map, starts }
  bundles.set(url, bundle)
  return bundle
}

const unbundled = (frame: ProfileNode["callFrame"]): ProfileNode["callFrame"] => {
  if (!/\/svc-start\/bundle\/[^/]+\/[^/]+\.js$/.test(frame.url)) return frame
  const { map, starts } = bundleOf(frame.url)
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber ?? 0)
  if (entry !== undefined && "originalSource" in entry) {
    const source = entry.originalSource.startsWith("file://")
      ? fileURLToPath(entry.originalSource)
      : resolve(dirname(fileURLToPath(frame.url)), entry.originalSource)
    return { ...frame, url: pathToFileURL(source).href, lineNumber: entry.originalLine }
  }
  let found: readonly [number, string] | undefined
  for (const start of starts) {
    if (start[0] > frame.lineNumber) break
    found = start
  }
  if (found === undefined) return frame
  return { ...frame, url: `file://${repoRoot}${found[1]}`, lineNumber: frame.lineNumber - found[0] - 1 }
}

const shortUrl = (url: string): string => {
  const path = url.replace(/^file:\/\//, "")
  if (path.startsWith(repoRoot)) return path.slice(repoRoot.length)
  return path
}

/** The package or folder a frame belongs to. */
const areaOf = (node: ProfileNode): string => {
  const { url, functionName } = node.callFrame
  if (url === "") {
    if (functionName === "(garbage collector)") return "GC"
    if (functionName === "(idle)") return "idle (waiting for I/O)"
    if (functionName === "(program)") return "(program: V8/native outside JS)"
    return `native: ${functionName || "(anonymous)"}`
  }
  if (url.startsWith("node:")) return url.startsWith("node:internal/") ? "node internals" : url
  const path = shortUrl(url)
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)(\/dist\/([^/]+))?/.exec(path)
  if (pkg !== null) return pkg[1] === "effect" && pkg[3] !== undefined ? `effect/${pkg[3]}` : pkg[1]!
  const src = /^src\/([^/]+)(\/[^/]+)?/.exec(path)
  if (src !== null) return `src/${src[1]}${src[2]?.endsWith(".ts") ? "" : (src[2] ?? "")}`
  return path
}

const nameOf = (node: ProfileNode): string => {
  const { url, functionName, lineNumber } = node.callFrame
  const where = url === "" ? "" : ` ${shortUrl(url)}:${lineNumber + 1}`
  return `${functionName || "(anonymous)"}${where}`
}

const top = (totals: Map<string, number>, totalMs: number, n: number): Array<Line> =>
  [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, ms]) => ({ name, ms: Math.round(ms), percent: Math.round((ms / totalMs) * 1000) / 10 }))

/**
 * Aggregates a V8 .cpuprofile by function and by area, self and inclusive time. `window` keeps
 * the samples taken between `fromMs` and `toMs` after the profile's start (the process start):
 * the load, not the start-up or the set-up before it.
 */
export const summariseProfile = (
  file: string,
  window: { readonly fromMs: number; readonly toMs: number },
  n = 20
): ProfileSummary => {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map(
    profile.nodes.map((node) => [node.id, { ...node, callFrame: unbundled(node.callFrame) }])
  )
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

  const self = new Map<string, number>()
  const area = new Map<string, number>()
  const inclusive = new Map<string, number>()
  const from = profile.startTime + window.fromMs * 1000
  const to = profile.startTime + window.toMs * 1000
  let totalMs = 0
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
    const node = byId.get(id)
    if (node === undefined || at < from || at > to) return
    totalMs += ms
    self.set(nameOf(node), (self.get(nameOf(node)) ?? 0) + ms)
    area.set(areaOf(node), (area.get(areaOf(node)) ?? 0) + ms)
    const seen = new Set<string>()
    for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) {
      const frame = byId.get(up)
      if (frame === undefined || !frame.callFrame.url.includes(`${repoRoot}src/`)) continue
      const name = nameOf(frame)
      if (seen.has(name)) continue
      seen.add(name)
      inclusive.set(name, (inclusive.get(name) ?? 0) + ms)
    }
  })
  return {
    file,
    totalMs: Math.round(totalMs),
    busyMs: Math.round(totalMs - (area.get("idle (waiting for I/O)") ?? 0)),
    byArea: top(area, totalMs, n),
    topSelf: top(self, totalMs, n),
    topSrcInclusive: top(inclusive, totalMs, n)
  }
}

/** A node of V8's sampling heap profile: bytes allocated by a function, under its callers. */
interface HeapNode {
  readonly callFrame: ProfileNode["callFrame"]
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

export interface AllocationLine {
  readonly name: string
  readonly bytesPerRequest: number
  readonly percent: number
}

export interface AllocationSummary {
  readonly file: string
  /** What the samples add up to, a request (an estimate: one sample per ~1 KB allocated). */
  readonly kbPerRequest: number
  /** Where it was allocated, by package or folder (as `byArea` of a CPU profile). */
  readonly byArea: ReadonlyArray<AllocationLine>
  /** Functions by the bytes they allocated themselves. */
  readonly topSelf: ReadonlyArray<AllocationLine>
}

/**
 * Aggregates a sampling heap profile (`bench/allocation-sampler.ts`) taken over `requests`
 * requests: bytes a request by area and by function, frames of the bundled start given back their
 * module and line.
 */
export const summariseAllocation = (file: string, requests: number, n = 20): AllocationSummary => {
  const root = (JSON.parse(readFileSync(file, "utf8")) as { readonly head: HeapNode }).head
  const self = new Map<string, number>()
  const area = new Map<string, number>()
  let total = 0
  const stack: Array<HeapNode> = [root]
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    stack.push(...node.children)
    if (node.selfSize === 0) continue
    const frame = { id: 0, callFrame: unbundled(node.callFrame) }
    const name = nameOf(frame)
    const where = areaOf(frame)
    total += node.selfSize
    self.set(name, (self.get(name) ?? 0) + node.selfSize)
    area.set(where, (area.get(where) ?? 0) + node.selfSize)
  }
  const per = Math.max(1, requests)
  // Ranked as a CPU profile's lines are, the bytes in place of the milliseconds.
  const lines = (totals: Map<string, number>): Array<AllocationLine> =>
    top(totals, Math.max(1, total), n).map(({ name, ms: bytes, percent }) => ({
      name,
      bytesPerRequest: Math.round(bytes / per),
      percent
    }))
  return {
    file,
    kbPerRequest: Math.round((total / per / 1024) * 10) / 10,
    byArea: lines(area),
    topSelf: lines(self)
  }
}
