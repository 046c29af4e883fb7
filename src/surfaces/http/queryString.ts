/**
 * A query string as the router's parser (fast-querystring, inside Effect's FindMyWay) reads it:
 * pairs split at `&`, the key at the first `=`, `+` read as a space, percent-escapes decoded only
 * where a key or value has one (a value also when it holds a second `=`), an undecodable one kept
 * as it was; a repeated key collects its values in order. A pair with neither key nor `=` is skipped.
 */
export const parseQuery = (input: string): Record<string, string | Array<string>> => {
  const result: Record<string, string | Array<string>> = Object.create(null)
  for (const pair of input.split("&")) {
    const equals = pair.indexOf("=")
    if (equals === -1 && pair.length === 0) continue
    const key = decoded(equals === -1 ? pair : pair.slice(0, equals), false)
    const value = equals === -1 ? "" : decoded(pair.slice(equals + 1), true)
    const current = result[key]
    if (current === undefined) result[key] = value
    else if (typeof current === "string") result[key] = [current, value]
    else current.push(value)
  }
  return result
}

const decoded = (text: string, isValue: boolean): string => {
  const spaced = text.includes("+") ? text.replaceAll("+", " ") : text
  if (!spaced.includes("%") && !(isValue && spaced.includes("="))) return spaced
  try {
    return decodeURIComponent(spaced) || spaced
  } catch {
    return spaced
  }
}
