/**
 * C0 controls (U+0000–U+001F) and DEL (U+007F). No identifier or parameter of the service holds one,
 * and NUL cannot even be stored in PostgreSQL text, so they are refused wherever input enters.
 */
const isControl = (code: number) => code <= 0x1f || code === 0x7f

/** The first control character of `text` as `U+XXXX`, or undefined when there is none. */
export const firstControlCharacter = (text: string): string | undefined => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (isControl(code)) return `U+${code.toString(16).toUpperCase().padStart(4, "0")}`
  }
  return undefined
}

export const hasControlCharacter = (text: string): boolean => firstControlCharacter(text) !== undefined

/** A value as it arrives (text, a repeated parameter's list, or JSON): its first control character. */
export const controlCharacterIn = (value: unknown): string | undefined => {
  if (typeof value === "string") return firstControlCharacter(value)
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = controlCharacterIn(item)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [name, item] of Object.entries(value)) {
      const found = firstControlCharacter(name) ?? controlCharacterIn(item)
      if (found !== undefined) return found
    }
  }
  return undefined
}
