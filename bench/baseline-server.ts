// The ceiling to compare against: a bare node:http server answering a small JSON body.
import { createServer } from "node:http"
import { baselineBody } from "./reference.ts"

const port = Number(process.argv[2] ?? "8790")
const length = Buffer.byteLength(baselineBody)

createServer((_request, response) => {
  response.writeHead(200, { "content-type": "application/json", "content-length": length })
  response.end(baselineBody)
}).listen(port, "127.0.0.1")
