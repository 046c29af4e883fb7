import { monitorEventLoopDelay } from "node:perf_hooks"

/** How late a process's event loop turned over a window, in milliseconds: its 99th percentile and its longest. */
export interface LoopDelay {
  readonly p99Ms: number
  readonly maxMs: number
}

/**
 * Starts sampling this process's event loop (`monitorEventLoopDelay`, every 2 ms); the function
 * returned stops and reads it. A request that arrives during a late turn waits that long before
 * its first line runs, whatever runs it.
 */
export const watchLoopDelay = (): (() => LoopDelay) => {
  const histogram = monitorEventLoopDelay({ resolution: 2 })
  histogram.enable()
  return () => {
    histogram.disable()
    // The histogram is in nanoseconds.
    return { p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6 }
  }
}
