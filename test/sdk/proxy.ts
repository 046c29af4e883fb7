import { createServer, type Server } from "node:http"
import { Effect } from "effect"

/** What the proxy does to the next request: forward it, drop the connection after the service answered, or refuse it. */
export type Mischief = "forward" | "drop-after-answer" | { readonly status: number; readonly problem: object }

export interface Proxy {
  readonly url: string
  /** Requests seen so far, with their Idempotency-Key. */
  readonly seen: Array<{ readonly path: string; readonly idempotencyKey: string | undefined }>
  /** Queues what happens to the next requests, in order; then it forwards. */
  readonly plan: (...steps: ReadonlyArray<Mischief>) => void
}

/** A forwarding proxy in front of the test app, which can misbehave on cue. */
export const startProxy = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ server: Server; proxy: Proxy }>((resolve) => {
          const queue: Array<Mischief> = []
          const seen: Proxy["seen"] = []
          const server = createServer(async (request, response) => {
            const chunks: Array<Buffer> = []
            for await (const chunk of request) chunks.push(chunk as Buffer)
            const idempotencyKey = request.headers["idempotency-key"]
            seen.push({ path: request.url ?? "", idempotencyKey: idempotencyKey as string | undefined })
            const step = queue.shift() ?? "forward"
            if (typeof step === "object") {
              response.writeHead(step.status, { "content-type": "application/problem+json" })
              response.end(JSON.stringify(step.problem))
              return
            }
            const headers: Record<string, string> = {}
            for (const [name, value] of Object.entries(request.headers))
              if (typeof value === "string" && name !== "host" && name !== "connection") headers[name] = value
            const answer = await fetch(`${target}${request.url}`, {
              method: request.method ?? "GET",
              headers,
              ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {})
            })
            const body = Buffer.from(await answer.arrayBuffer())
            if (step === "drop-after-answer") {
              request.socket.destroy()
              return
            }
            response.writeHead(answer.status, Object.fromEntries(answer.headers))
            response.end(body)
          })
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            const port = typeof address === "object" && address !== null ? address.port : 0
            resolve({
              server,
              proxy: { url: `http://127.0.0.1:${port}`, seen, plan: (...steps) => queue.push(...steps) }
            })
          })
        })
    ),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          })
      )
  ).pipe(Effect.map(({ proxy }) => proxy))
