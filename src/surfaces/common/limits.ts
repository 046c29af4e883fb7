import { PayloadTooLarge } from "../../contract/errors.ts"

/** A request whose announced body exceeds the limit is refused before anything reads it. */
export const announcedBodyTooLarge = (
  headers: Readonly<Record<string, string | undefined>>,
  maxBodyBytes: number
): PayloadTooLarge | undefined => {
  const length = Number(headers["content-length"] ?? "0")
  return length > maxBodyBytes
    ? new PayloadTooLarge({ message: `The request body is ${length} bytes; the limit is ${maxBodyBytes}.` })
    : undefined
}

/** A body that turned out larger than the limit while it was read (no Content-Length announced it). */
export const bodyTooLarge = (maxBodyBytes: number): PayloadTooLarge =>
  new PayloadTooLarge({ message: `The request body is too large; the limit is ${maxBodyBytes}.` })
