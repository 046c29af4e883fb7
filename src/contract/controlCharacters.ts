import { controlCharacterIn, firstControlCharacter } from "../domain/controlCharacters.ts"
import { InvalidInput } from "./errors.ts"

/**
 * The one check every surface runs on named input (REST path and query parameters, MCP tool
 * arguments): INVALID_INPUT naming the first parameter whose name or value holds a control character.
 */
export const controlCharacterInput = (
  params: Readonly<Record<string, unknown>>
): InvalidInput | undefined => {
  for (const name in params) {
    if (!Object.hasOwn(params, name)) continue
    const found = firstControlCharacter(name) ?? controlCharacterIn(params[name])
    if (found === undefined) continue
    // A name with a control character is echoed escaped, so the problem body stays printable.
    const param = JSON.stringify(name).slice(1, -1)
    return new InvalidInput({
      message: `\`${param}\` contains a control character (${found}). Parameters and identifiers are printable text; remove it and send the call again.`,
      param
    })
  }
  return undefined
}
