import { createServer, request, type Server } from "node:http"
import { connect } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { listeningSockets, portIsFree, reusePort, spreadAccepts } from "../../src/surfaces/http/acceptors.ts"

/** A server spread over `listeningSockets` sockets whose answers name the server that accepted. */
const spread = async (handle: (path: string) => Promise<void> = async () => {}) => {
  const made: Array<Server> = []
  const server = spreadAccepts(() => {
    const node = createServer()
    made.push(node)
    return node
  })
  const seen: Array<string> = []
  server.on("request", (req, res) => {
    seen.push(req.url ?? "")
    void handle(req.url ?? "").then(() =>
      res.end(String(made.indexOf((req.socket as { server?: Server }).server!)))
    )
  })
  await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1", reusePort }, resolve))
  while (!made.every((node) => node.listening) || made.length < listeningSockets) await sleep(5)
  const port = (server.address() as { port: number }).port
  return { server, made, seen, port }
}

/** One request on a connection of its own; the body and status. */
const get = (port: number, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const outgoing = request({ port, host: "127.0.0.1", path, agent: false }, (response) => {
      let body = ""
      response.on("data", (chunk: Buffer) => (body += chunk.toString()))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
    })
    outgoing.on("error", reject)
    outgoing.end()
  })

const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()))

describe.runIf(process.platform === "linux")("the HTTP port's listening sockets (Linux)", () => {
  it("eight sockets share the port, and what each accepts is answered by the first server's handler", async () => {
    const { server, made, port } = await spread()
    try {
      assert.strictEqual(listeningSockets, 8)
      assert.strictEqual(made.length, 8)
      const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => get(port, `/n${i}`)))
      assert.deepStrictEqual(
        answers.map((answer) => answer.status),
        answers.map(() => 200)
      )
      // The kernel picks a socket by the connection's address and port: 64 connections all on one
      // of 8 sockets has odds of 8^-63.
      const acceptedBy = new Set(answers.map((answer) => answer.body))
      assert.isAbove(acceptedBy.size, 1, `accepted by ${[...acceptedBy].join(", ")}`)
      for (const index of acceptedBy) assert.include(["0", "1", "2", "3", "4", "5", "6", "7"], index)
    } finally {
      await closeServer(server)
    }
  })

  it("closing waits for the answers in flight on every socket, and then none takes a connection", async () => {
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    const { server, seen, port } = await spread((path) =>
      path.startsWith("/slow") ? released : Promise.resolve()
    )
    const inFlight = Array.from({ length: 16 }, (_, i) => get(port, `/slow${i}`))
    while (seen.length < 16) await sleep(5)
    let closed = false
    const closing = closeServer(server).then(() => (closed = true))
    await sleep(100)
    assert.isFalse(closed, "the close waits for the 16 answers in flight")
    release()
    const answers = await Promise.all(inFlight)
    await closing
    // Sixteen connections all on the first socket has odds of 8^-15: some answers came from others.
    assert.isAbove(new Set(answers.map((answer) => answer.body)).size, 1)
    assert.deepStrictEqual(
      answers.map((answer) => answer.status),
      answers.map(() => 200)
    )
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => {
        socket.destroy()
        resolve("connected")
      })
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"))
    })
    assert.strictEqual(refused, "ECONNREFUSED")
  })

  it("a port another server holds is not free, even one spread over sockets that share it", async () => {
    const { server, port } = await spread()
    try {
      const exit = await Effect.runPromiseExit(portIsFree(port, "127.0.0.1"))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "EADDRINUSE")
    } finally {
      await closeServer(server)
    }
    assert.isTrue(Exit.isSuccess(await Effect.runPromiseExit(portIsFree(port, "127.0.0.1"))))
    assert.isTrue(Exit.isSuccess(await Effect.runPromiseExit(portIsFree(0, "127.0.0.1"))))
  })
})
