/**
 * Imported into a service the bench measures (`node --import bench/allocation-probe.ts`, with
 * `BENCH_ALLOCATION_FILE` set): how many bytes the service allocates over a window, which the bench
 * opens and closes with SIGUSR2. It sets no V8 flag and holds nothing between windows; inside one,
 * V8's `GCProfiler` keeps one record per collection.
 *
 * Bytes allocated are what the heap grew by between collections: the heap used before each
 * collection less what the one before it left (or the window's start), plus what the last one left
 * to the end. Unlike requests a second, this hardly moves with the machine's load (two runs of the
 * same cache hit: 66.9 and 67.0 KB a request), so it tells a change that allocates less from noise.
 */
import { renameSync, writeFileSync } from "node:fs"
import { GCProfiler, getHeapStatistics } from "node:v8"
import { type LoopDelay, watchLoopDelay } from "./loopDelay.ts"

/** What a window measured; the bench reads it from `BENCH_ALLOCATION_FILE`. */
export interface AllocationWindow {
  readonly allocatedBytes: number
  readonly scavenges: number
  readonly markCompacts: number
  /** Time in collections' pauses (V8's `cost`), in microseconds. */
  readonly gcPauseUs: number
  /** The longest single collection's pause, in microseconds. */
  readonly longestGcPauseUs: number
  /** How late the event loop turned (`watchLoopDelay`): its 99th percentile and its longest, in ms. */
  readonly loopDelayP99Ms?: number
  readonly loopDelayMaxMs?: number
}

interface GcRecord {
  readonly gcType: string
  readonly cost: number
  readonly beforeGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
  readonly afterGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
}

/** The window's figures from the heap used at its start and end and the collections between. */
export const windowOf = (
  usedAtStart: number,
  records: ReadonlyArray<GcRecord>,
  usedAtEnd: number
): AllocationWindow => {
  let allocatedBytes = 0
  let left = usedAtStart
  let scavenges = 0
  let markCompacts = 0
  let gcPauseUs = 0
  let longestGcPauseUs = 0
  for (const record of records) {
    allocatedBytes += Math.max(0, record.beforeGC.heapStatistics.usedHeapSize - left)
    left = record.afterGC.heapStatistics.usedHeapSize
    if (record.gcType === "Scavenge" || record.gcType === "MinorMarkSweep") scavenges++
    else if (record.gcType === "MarkSweepCompact") markCompacts++
    gcPauseUs += record.cost
    longestGcPauseUs = Math.max(longestGcPauseUs, record.cost)
  }
  allocatedBytes += Math.max(0, usedAtEnd - left)
  return { allocatedBytes, scavenges, markCompacts, gcPauseUs, longestGcPauseUs }
}

const file = process.env.BENCH_ALLOCATION_FILE
if (file !== undefined && file !== "") {
  let open:
    | { readonly profiler: GCProfiler; readonly used: number; readonly loopDelay: () => LoopDelay }
    | undefined
  process.on("SIGUSR2", () => {
    if (open === undefined) {
      const profiler = new GCProfiler()
      profiler.start()
      open = { profiler, used: getHeapStatistics().used_heap_size, loopDelay: watchLoopDelay() }
      return
    }
    const { profiler, used, loopDelay } = open
    open = undefined
    const { p99Ms, maxMs } = loopDelay()
    const window = {
      ...windowOf(used, profiler.stop().statistics, getHeapStatistics().used_heap_size),
      loopDelayP99Ms: p99Ms,
      loopDelayMaxMs: maxMs
    }
    // Whole or not at all: the bench polls for the file.
    writeFileSync(`${file}.part`, JSON.stringify(window))
    renameSync(`${file}.part`, file)
  })
}
