import { linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Data, Effect } from "effect"

/** Another live process holds the PGlite directory. */
export class DataDirLocked extends Data.TaggedError("DataDirLocked")<{
  readonly dataDir: string
  readonly pid: number
}> {
  override get message() {
    return `The data directory ${this.dataDir} is in use by another process${Number.isNaN(this.pid) ? "" : ` (pid ${this.pid})`}: stop it, or start this one with another DATA_DIR.`
  }
}

/** The lock could not be taken for another reason (permissions, say). */
export class DataDirUnusable extends Data.TaggedError("DataDirUnusable")<{
  readonly dataDir: string
  readonly reason: string
}> {
  override get message() {
    return `The data directory ${this.dataDir} cannot be locked: ${this.reason}.`
  }
}

export const lockFileName = "svc.lock"

const isAlive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const errno = (error: unknown) => (error as NodeJS.ErrnoException).code

/**
 * Takes `<dataDir>/svc.lock`, a file holding our pid: written under a name of our own, then
 * hard-linked to `svc.lock`, which fails when the name exists (atomically, and the lock is never
 * seen empty). When it exists and its pid is alive, the directory is taken. When the pid is dead
 * (a crash, kill -9) or is our own (a container restarted with the same pid), the lock is stale:
 * it is removed and taken once more. Two processes taking over one stale lock in the same instant
 * could both succeed (the removal and the link are two steps); starting twice at once after a
 * crash is the one case this does not cover.
 */
const tryLock = (dataDir: string): Effect.Effect<string, DataDirLocked | DataDirUnusable> =>
  Effect.suspend((): Effect.Effect<string, DataDirLocked | DataDirUnusable> => {
    const path = join(dataDir, lockFileName)
    const own = `${path}.${process.pid}`
    const unusable = (error: unknown): Effect.Effect<never, DataDirUnusable> =>
      Effect.fail(new DataDirUnusable({ dataDir, reason: String((error as Error).message) }))
    try {
      writeFileSync(own, `${process.pid}\n`, { mode: 0o644 })
    } catch (error) {
      return unusable(error)
    }
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          linkSync(own, path)
          return Effect.succeed(path)
        } catch (error) {
          if (errno(error) !== "EEXIST") return unusable(error)
        }
        let holder = Number.NaN
        try {
          holder = Number.parseInt(readFileSync(path, "utf8").trim(), 10)
        } catch {}
        if (isAlive(holder)) return Effect.fail(new DataDirLocked({ dataDir, pid: holder }))
        try {
          unlinkSync(path)
        } catch (error) {
          if (errno(error) !== "ENOENT") return unusable(error)
        }
      }
      return Effect.fail(new DataDirLocked({ dataDir, pid: Number.NaN }))
    } finally {
      try {
        unlinkSync(own)
      } catch {}
    }
  })

/** Holds the directory's lock for the scope; released (the file removed) when the scope closes. */
export const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(tryLock(dataDir), (path) =>
    Effect.sync(() => {
      try {
        if (readFileSync(path, "utf8").trim() === String(process.pid)) unlinkSync(path)
      } catch {}
    })
  )
