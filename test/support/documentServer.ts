import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import type { IncomingMessage, ServerResponse } from "node:http"
import { createServer } from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { getCACertificates, setDefaultCACertificates } from "node:tls"

/**
 * An https server on loopback standing in for the hosts of Client ID Metadata Documents: a
 * self-signed certificate for `agent.test`, `localhost`, 127.0.0.1 and ::1, trusted by this test
 * process only (Node's default CA list), and a count of the connections it accepted.
 */
const certificate = () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-cimd-"))
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "2",
        "-subj",
        "/CN=agent.test",
        "-addext",
        "subjectAltName=DNS:agent.test,DNS:localhost,IP:127.0.0.1,IP:::1"
      ],
      { stdio: "ignore" }
    )
    return {
      key: readFileSync(join(dir, "key.pem"), "utf8"),
      cert: readFileSync(join(dir, "cert.pem"), "utf8")
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export type Route = (request: IncomingMessage, response: ServerResponse) => void

export const documentServer = async (routes: Record<string, Route>) => {
  const { key, cert } = certificate()
  setDefaultCACertificates([...getCACertificates("default"), cert])
  const requests: Array<string> = []
  let connections = 0
  const server = createServer({ key, cert }, (request, response) => {
    requests.push(request.url ?? "/")
    const route = routes[new URL(request.url ?? "/", "https://x").pathname]
    if (route === undefined) response.writeHead(404, { "content-type": "text/plain" }).end("not found")
    else route(request, response)
  })
  server.on("connection", () => {
    connections++
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A JSON answer with a Cache-Control max-age. */
export const json =
  (body: unknown, maxAge = 600): Route =>
  (_request, response) =>
    response
      .writeHead(200, { "content-type": "application/json", "cache-control": `max-age=${maxAge}` })
      .end(JSON.stringify(body))
