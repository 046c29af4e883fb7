import type { Server } from "node:http"
import { createServer } from "node:net"
import { Effect } from "effect"
import { ServeError } from "effect/http/HttpServerError"

/**
 * Listening sockets of the HTTP port, on Linux. libuv accepts one connection per turn of the
 * event loop and listening socket, so connections that arrive together (a client's pool opening,
 * clients reconnecting after a restart, a load balancer's) wait in the kernel one turn each, and a
 * turn under load takes milliseconds on PostgreSQL and tens of them on PGlite, whose statements
 * run on this thread: 50 connections opened at once on a loaded PGlite service waited up to 1.5 s
 * to be accepted. The kernel spreads new connections over every socket that shares the port
 * (`SO_REUSEPORT`), so each turn accepts up to one per socket.
 */
export const listeningSockets = process.platform === "linux" ? 8 : 1

/** Whether the HTTP port is shared by several sockets of this process (`SO_REUSEPORT`). */
export const reusePort = listeningSockets > 1

/** The events `NodeHttpServer` handles on its server; each extra server hands them on to it. */
const handedOn = ["request", "checkContinue", "upgrade"] as const

/**
 * The server `make` builds, served on `listeningSockets` sockets: once it listens, `make` builds
 * one more server per extra socket, on the same address, each with its own connections (their
 * timeouts, keep-alive and protocol errors as configured by `make`) and handing its requests to
 * the first server's handlers. Closing the first server closes every one: none takes a new
 * connection, idle ones close, and the callback waits for the answers in flight on all of them.
 */
export const spreadAccepts = (make: () => Server): Server => {
  const server = make()
  if (!reusePort) return server
  const others: Array<Server> = []
  let closing = false
  server.once("listening", () => {
    const address = server.address()
    if (closing || address === null || typeof address === "string") return
    for (let i = 1; i < listeningSockets; i++) {
      const other = make()
      for (const event of handedOn) other.on(event, (...args: Array<unknown>) => server.emit(event, ...args))
      // One that cannot listen leaves the others; the first server's socket is the one that must.
      other.once("error", () => other.close())
      other.listen({ port: address.port, host: address.address, reusePort: true })
      others.push(other)
    }
  })
  const close = server.close.bind(server)
  server.close = (callback?: (error?: Error) => void) => {
    closing = true
    const closed = others
      .splice(0)
      .filter((other) => other.listening)
      .map((other) => new Promise<void>((resolve) => other.close(() => resolve())))
    return close((error) => void Promise.all(closed).then(() => callback?.(error)))
  }
  return server
}

/**
 * Fails as the server's own `listen` would (a `ServeError`) when anything already holds `port` on
 * `host`: with `SO_REUSEPORT` a second instance started on the same port by mistake would otherwise
 * share the connections with the first instead of failing to start. Port 0 (any free port) needs
 * no check.
 */
export const portIsFree = (port: number, host: string): Effect.Effect<void, ServeError> =>
  port === 0 || !reusePort
    ? Effect.void
    : Effect.callback<void, ServeError>((resume) => {
        const probe = createServer()
        probe.once("error", (cause) => resume(Effect.fail(new ServeError({ cause }))))
        probe.listen({ port, host }, () => probe.close(() => resume(Effect.void)))
      })
