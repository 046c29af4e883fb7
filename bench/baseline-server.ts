// The ceiling to compare against: a bare node:http server answering a small JSON body.
import { createServer } from "node:http"

const port = Number(process.argv[2] ?? "8790")
const body = JSON.stringify({
  schema_version: 2,
  kind: "baseline",
  data: { id: "baseline", name: "A bare node:http server", headline: "The same loopback, the same load" },
  cost: { quoted: 0, charged: 0, refunded: 0 },
  receipt: { id: "rcpt_baseline000000000", replayed: false }
})

createServer((_request, response) => {
  response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}).listen(port, "127.0.0.1")
