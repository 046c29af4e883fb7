import { connect, createServer, type Socket } from "node:net"

/**
 * A loopback TCP proxy in front of PostgreSQL that reads the frontend protocol and records every
 * statement the service sends. A round trip is a Sync (extended protocol) or a simple Query: each
 * makes the client wait for ReadyForQuery.
 */
export interface Counted {
  readonly roundTrips: number
  readonly statements: ReadonlyArray<string>
}

export interface PgProxy {
  readonly port: number
  /** Counts since the last `reset`. */
  readonly snapshot: () => Counted
  readonly reset: () => void
  /** True once a connection switched to TLS (then nothing can be counted). */
  readonly encrypted: () => boolean
  readonly close: () => Promise<void>
}

const sslRequest = 80877103
const gssRequest = 80877104
const cancelRequest = 80877102

const cString = (buffer: Buffer, at: number): [string, number] => {
  const end = buffer.indexOf(0, at)
  return [buffer.toString("utf8", at, end), end + 1]
}

export const startPgProxy = (target: { readonly host: string; readonly port: number }): Promise<PgProxy> => {
  let roundTrips = 0
  let statements: Array<string> = []
  let tls = false
  const sockets = new Set<Socket>()

  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    sockets.add(client).add(upstream)
    const named = new Map<string, string>()
    let unnamed = ""
    let bound = ""
    let pending = Buffer.alloc(0)
    let startup = true

    const frontend = (type: number, body: Buffer) => {
      const letter = String.fromCharCode(type)
      if (letter === "Q") {
        roundTrips += 1
        statements.push(cString(body, 0)[0])
      } else if (letter === "P") {
        const [name, next] = cString(body, 0)
        const [text] = cString(body, next)
        if (name === "") unnamed = text
        else named.set(name, text)
      } else if (letter === "B") {
        const [, next] = cString(body, 0)
        const [statement] = cString(body, next)
        bound = statement === "" ? unnamed : (named.get(statement) ?? `<prepared ${statement}>`)
      } else if (letter === "E") {
        statements.push(bound)
      } else if (letter === "S") {
        roundTrips += 1
      }
    }

    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk)
      if (tls) return
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        if (startup) {
          if (pending.length < 8) return
          const length = pending.readInt32BE(0)
          if (pending.length < length) return
          const code = pending.readInt32BE(4)
          pending = pending.subarray(length)
          // After an SSL or GSS request the next message is again a startup message.
          if (code !== sslRequest && code !== gssRequest && code !== cancelRequest) startup = false
          continue
        }
        if (pending.length < 5) return
        const length = pending.readInt32BE(1)
        if (pending.length < length + 1) return
        frontend(pending[0]!, pending.subarray(5, length + 1))
        pending = pending.subarray(length + 1)
      }
    })
    let first = true
    upstream.on("data", (chunk: Buffer) => {
      // The one-byte answer to an SSLRequest: "S" means TLS follows and the stream is opaque.
      if (first && startup && chunk.length === 1 && chunk[0] === 0x53) tls = true
      first = false
      client.write(chunk)
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on("close", close).on("error", close)
    upstream.on("close", close).on("error", close)
  })

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve({
        port: typeof address === "object" && address !== null ? address.port : 0,
        snapshot: () => ({ roundTrips, statements: [...statements] }),
        reset: () => {
          roundTrips = 0
          statements = []
        },
        encrypted: () => tls,
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
}
