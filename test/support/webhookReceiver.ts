import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

/** One request a receiver got: its path, the three Standard Webhooks headers and the raw body. */
export interface Received {
  readonly path: string
  readonly id: string
  readonly timestamp: string
  readonly signature: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly at: number
}

/** What the receiver does with one request: answer, hang (never answer), or drop the connection. */
export type Behaviour =
  | { readonly status: number; readonly body?: string; readonly headers?: Record<string, string> }
  | { readonly hang: true }
  | { readonly drop: true }
  | { readonly delayMs: number; readonly status: number }

/**
 * A webhook receiver on 127.0.0.1 (plain http: the tests run with WEBHOOK_ALLOW_PRIVATE_URLS). Each
 * request is recorded whole before it is answered; `behave` decides the answer (200 by default).
 * It counts the requests in flight per path, to show an endpoint never gets two at once.
 */
export const startReceiver = async (
  behave: (request: Received, n: number) => Behaviour = () => ({ status: 200 }),
  port = 0
) => {
  const received: Array<Received> = []
  const inFlight = new Map<string, number>()
  const mostInFlight = new Map<string, number>()
  const hanging: Array<ServerResponse> = []
  const handle = (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const headers = Object.fromEntries(
        Object.entries(incoming.headers).map(([name, value]) => [
          name,
          Array.isArray(value) ? value.join(",") : (value ?? "")
        ])
      )
      const request: Received = {
        path: incoming.url ?? "/",
        id: headers["webhook-id"] ?? "",
        timestamp: headers["webhook-timestamp"] ?? "",
        signature: headers["webhook-signature"] ?? "",
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now()
      }
      received.push(request)
      const now = (inFlight.get(request.path) ?? 0) + 1
      inFlight.set(request.path, now)
      mostInFlight.set(request.path, Math.max(mostInFlight.get(request.path) ?? 0, now))
      const done = () => inFlight.set(request.path, (inFlight.get(request.path) ?? 1) - 1)
      outgoing.on("close", done)
      const behaviour = behave(request, received.length)
      if ("hang" in behaviour) {
        hanging.push(outgoing)
        return
      }
      if ("drop" in behaviour) {
        incoming.socket.destroy()
        return
      }
      const answer = () =>
        outgoing
          .writeHead(behaviour.status, {
            "content-type": "text/plain",
            ...("headers" in behaviour ? behaviour.headers : {})
          })
          .end("body" in behaviour ? (behaviour.body ?? "") : "ok")
      if ("delayMs" in behaviour) setTimeout(answer, behaviour.delayMs)
      else answer()
    })
  }
  const server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  const listening = (server.address() as AddressInfo).port
  return {
    port: listening,
    url: (path = "/hook") => `http://127.0.0.1:${listening}${path}`,
    received,
    /** The most requests a path had in flight at once. */
    mostInFlight: (path: string) => mostInFlight.get(path) ?? 0,
    /** Answers every hanging request with `status`. */
    release: (status = 200) => {
      for (const response of hanging.splice(0))
        if (!response.destroyed) response.writeHead(status).end("late")
    },
    /** Waits until `predicate` holds of the requests so far (polling), or fails after `timeoutMs`. */
    waitFor: async (predicate: (all: ReadonlyArray<Received>) => boolean, timeoutMs = 15_000) => {
      const started = Date.now()
      while (!predicate(received)) {
        if (Date.now() - started > timeoutMs)
          throw new Error(
            `the receiver did not get what was expected in ${timeoutMs} ms; got ${received.length}`
          )
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      return received
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Verifies a delivery as a receiver should, with the `standardwebhooks` package; the parsed body. */
export const verified = (secret: string, request: Received) =>
  new Webhook(secret).verify(request.body, {
    "webhook-id": request.id,
    "webhook-timestamp": request.timestamp,
    "webhook-signature": request.signature
  }) as { type: string; id: string; created_at: string; account_id: string; data: Record<string, any> }
