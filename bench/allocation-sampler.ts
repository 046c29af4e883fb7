/**
 * Imported into the service the bench profiles for allocation (`node --import
 * bench/allocation-sampler.ts`, with `BENCH_HEAP_PROFILE_FILE` set): SIGUSR2 starts V8's sampling
 * heap profiler, the next SIGUSR2 stops it and writes the profile to that file. It samples every
 * allocation, kept or collected since (`includeObjectsCollectedByMinorGC` and `...MajorGC`), so
 * the profile says where the bytes a request allocates were allocated, by function. Only the
 * allocation profile's run imports it: sampling costs CPU, and no measured case runs with it.
 */
import { renameSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"

const file = process.env.BENCH_HEAP_PROFILE_FILE
/** One sample per this many bytes allocated, on average. */
const samplingInterval = 1024

if (file !== undefined) {
  const session = new Session()
  session.connect()
  const post = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (error, result) => (error === null ? resolve(result) : reject(error)))
    )
  let sampling = false
  process.on("SIGUSR2", () => {
    sampling = !sampling
    const step = sampling
      ? post("HeapProfiler.enable").then(() =>
          post("HeapProfiler.startSampling", {
            samplingInterval,
            includeObjectsCollectedByMinorGC: true,
            includeObjectsCollectedByMajorGC: true
          })
        )
      : post("HeapProfiler.stopSampling").then((result) => {
          const { profile } = result as { readonly profile: unknown }
          // Whole or not at all: the bench reads the file as soon as it exists.
          writeFileSync(`${file}.tmp`, JSON.stringify(profile))
          renameSync(`${file}.tmp`, file)
          return post("HeapProfiler.disable")
        })
    step.catch((error: unknown) => console.error("allocation sampler:", error))
  })
}
