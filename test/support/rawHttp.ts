import { connect } from "node:net"
import { Effect } from "effect"

export interface RawReply {
  /** The status line, e.g. `HTTP/1.1 400 Bad Request`; empty when the server answered nothing. */
  readonly statusLine: string
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: any
  /** The server closed the connection (rather than the test giving up waiting). */
  readonly closed: boolean
}

/** One complete HTTP/1.1 response with a Content-Length body, or undefined while bytes are missing. */
const parseResponse = (bytes: Buffer, closed: boolean): RawReply | undefined => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end < 0) return undefined
  const [statusLine = "", ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers["content-length"] ?? "0")
  if (bytes.length < end + 4 + length) return undefined
  const text = bytes.subarray(end + 4, end + 4 + length).toString("utf8")
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { statusLine, status: Number(statusLine.split(" ")[1]), headers, body, closed }
}

/**
 * Writes `request` as raw bytes on a fresh TCP connection (so a test can send what no HTTP client
 * would) and reads the first response: as soon as it is complete (or, with `untilClose`, once the
 * server closed the connection), else whatever came when `waitMs` passed. The request body need
 * not be complete.
 */
export const rawExchange = (
  url: string,
  request: string | Buffer,
  options: { readonly untilClose?: boolean; readonly waitMs?: number } = {}
) =>
  Effect.callback<RawReply>((resume) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname)
    let received = Buffer.alloc(0)
    let done = false
    const finish = (closed: boolean, gaveUp = false) => {
      if (done) return
      const reply = parseResponse(received, closed)
      if ((reply === undefined || options.untilClose === true) && !closed && !gaveUp) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resume(
        Effect.succeed(
          reply ?? { statusLine: "", status: 0, headers: {}, body: received.toString("latin1"), closed }
        )
      )
    }
    const timer = setTimeout(() => finish(false, true), options.waitMs ?? 5_000)
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk])
      finish(false)
    })
    socket.on("close", () => finish(true))
    socket.on("error", () => {})
    socket.write(request)
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.destroy()
    })
  })
