import { Console, Effect } from "effect"

/** Colour only on a terminal, and never with NO_COLOR set (https://no-color.org). */
const colour = (stream: NodeJS.WriteStream) => stream.isTTY === true && !process.env.NO_COLOR
const paint = (code: number, text: string, stream: NodeJS.WriteStream = process.stdout) =>
  colour(stream) ? `\u001b[${code}m${text}\u001b[0m` : text
export const bold = (text: string, stream?: NodeJS.WriteStream) => paint(1, text, stream)
export const dim = (text: string, stream?: NodeJS.WriteStream) => paint(2, text, stream)
export const red = (text: string, stream?: NodeJS.WriteStream) => paint(31, text, stream)

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const isScalar = (value: unknown) => value === null || ["string", "number", "boolean"].includes(typeof value)

const cell = (value: unknown, width = 48) => {
  const text =
    value === null || value === undefined ? "" : Array.isArray(value) ? value.join(",") : String(value)
  const flat = text.replace(/\s+/g, " ")
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat
}

/** Rows of records as an aligned table of their scalar columns (at most `maxColumns`). */
export const table = (rows: ReadonlyArray<Record<string, unknown>>, maxColumns = 6): string => {
  if (rows.length === 0) return dim("(none)")
  const columns = Object.keys(rows[0]!)
    .filter((name) => rows.some((row) => isScalar(row[name]) || Array.isArray(row[name])))
    .slice(0, maxColumns)
  const cells = rows.map((row) => columns.map((name) => cell(row[name])))
  const widths = columns.map((name, i) => Math.max(name.length, ...cells.map((row) => row[i]!.length)))
  const line = (values: ReadonlyArray<string>) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join("  ")
      .trimEnd()
  return [bold(line(columns)), ...cells.map(line)].join("\n")
}

/**
 * A record's scalar fields as `name  value` lines, a nested record's fields indented under its name
 * (whole, never cut), then each list of records as a table.
 */
export const human = (value: unknown, indent = ""): string => {
  if (!value || typeof value !== "object") return String(value)
  if (Array.isArray(value)) return table(value as Array<Record<string, unknown>>)
  const record = value as Record<string, unknown>
  const names = Object.keys(record)
  const width = Math.max(...names.map((n) => n.length))
  const lines: Array<string> = []
  const sections: Array<string> = []
  for (const name of names) {
    const field = record[name]
    if (isScalar(field) || (Array.isArray(field) && field.every(isScalar)))
      lines.push(`${indent}${dim(name.padEnd(width))}  ${cell(field, 100)}`)
    else if (Array.isArray(field) && field.length > 0)
      sections.push(`${bold(name)}\n${table(field as Array<Record<string, unknown>>)}`)
    else if (Array.isArray(field)) lines.push(`${indent}${dim(name.padEnd(width))}  ${dim("(none)")}`)
    else if (field && typeof field === "object")
      lines.push(`${indent}${dim(name)}`, human(field, `${indent}  `))
  }
  return [lines.join("\n"), ...sections].filter((s) => s.length > 0).join("\n\n")
}

/** A spinner on stderr while `effect` runs, only when stderr is a terminal. */
export const withSpinner = <A, E, R>(
  label: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  if (process.stderr.isTTY !== true) return effect
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      let n = 0
      return setInterval(() => process.stderr.write(`\r${frames[n++ % frames.length]} ${label}`), 80)
    }),
    () => effect,
    (timer) =>
      Effect.sync(() => {
        clearInterval(timer)
        process.stderr.write("\r\u001b[2K")
      })
  )
}
