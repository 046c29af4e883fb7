import { closeSync, openSync, readSync } from "node:fs"

/**
 * Just enough of the tar format (ustar, as PGlite's `dumpDataDir` writes it) to read PGlite's
 * templates and to leave files out of one: 512-byte blocks, each entry a header block (name, octal
 * size, type, prefix) followed by its data padded to whole blocks, and zero blocks at the end.
 */

const block = 512

const text = (bytes: Uint8Array, start: number, length: number) => {
  const field = bytes.subarray(start, start + length)
  const end = field.indexOf(0)
  return new TextDecoder().decode(end === -1 ? field : field.subarray(0, end))
}

/** An entry's path without a leading slash: ustar's prefix, then its name. */
const pathOf = (header: Uint8Array) => {
  const name = text(header, 0, 100)
  const prefix = text(header, 345, 155)
  return (prefix === "" ? name : `${prefix}/${name}`).replace(/^\/+/, "").replace(/\/+$/, "")
}

const sizeOf = (header: Uint8Array) => Number.parseInt(text(header, 124, 12).trim() || "0", 8)

const padded = (size: number) => Math.ceil(size / block) * block

export interface TarEntry {
  /** Relative, without leading or trailing slashes. */
  readonly path: string
  readonly kind: "file" | "directory" | "other"
  readonly size: number
}

/**
 * Reads the archive at `file` entry by entry, without holding it in memory: `visit` gets each
 * entry and, for a file, a function that reads its data into a buffer of its own (which the
 * caller may keep); data not asked for is skipped.
 */
export const readTar = (file: string, visit: (entry: TarEntry, data: () => Uint8Array) => void): void => {
  const fd = openSync(file, "r")
  try {
    const header = new Uint8Array(block)
    let offset = 0
    while (readSync(fd, header, 0, block, offset) === block && !header.every((byte) => byte === 0)) {
      const size = sizeOf(header)
      const type = String.fromCharCode(header[156] ?? 0)
      const kind = type === "0" || type === "\0" ? "file" : type === "5" ? "directory" : "other"
      const at = offset + block
      visit({ path: pathOf(header), kind, size }, () => {
        const data = new Uint8Array(size)
        let read = 0
        while (read < size) {
          const n = readSync(fd, data, read, size - read, at + read)
          if (n === 0) throw new Error(`${file}: truncated tar entry`)
          read += n
        }
        return data
      })
      offset = at + padded(size)
    }
  } finally {
    closeSync(fd)
  }
}

/** `tar` without the entries whose path (leading slashes aside) is one of `paths`. */
export const withoutEntries = (tar: Uint8Array, paths: ReadonlySet<string>): Uint8Array => {
  const kept: Array<Uint8Array> = []
  let offset = 0
  while (offset + block <= tar.length) {
    const header = tar.subarray(offset, offset + block)
    if (header.every((byte) => byte === 0)) break
    const end = offset + block + padded(sizeOf(header))
    if (!paths.has(pathOf(header))) kept.push(tar.subarray(offset, end))
    offset = end
  }
  kept.push(new Uint8Array(2 * block))
  const out = new Uint8Array(kept.reduce((total, part) => total + part.length, 0))
  let at = 0
  for (const part of kept) {
    out.set(part, at)
    at += part.length
  }
  return out
}
