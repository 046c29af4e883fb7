import { describe, expect, it } from "vitest"
import { freePort, serviceEnv, startNode } from "../../bench/proc.ts"
import { baselineBody, type Reference, referenceServers } from "../../bench/reference.ts"

/**
 * The bench's two reference servers, the bare node:http baseline and the framework's floor (one
 * route of Effect's HTTP server), answer the same bytes: the floor's ratio over the baseline is then
 * what Effect's server costs, not a difference in what is sent.
 */
describe("the bench's reference servers", () => {
  const answers = async (reference: Reference) => {
    const port = await freePort()
    const server = await startNode({
      label: `reference-test-${reference.replace(/\W/g, "-")}`,
      args: [referenceServers[reference], String(port)],
      port,
      readyPath: "/",
      env: serviceEnv({}),
      pin: false
    })
    try {
      const root = await fetch(`${server.url}/`)
      const other = await fetch(`${server.url}/v1/usage`)
      await other.arrayBuffer()
      return {
        status: root.status,
        contentType: root.headers.get("content-type"),
        contentLength: root.headers.get("content-length"),
        body: await root.text(),
        otherStatus: other.status
      }
    } finally {
      await server.stop()
    }
  }

  it("answer the same body with the same headers", async () => {
    const bare = await answers("node:http")
    const floor = await answers("effect/http")
    const expected = {
      status: 200,
      contentType: "application/json",
      contentLength: String(Buffer.byteLength(baselineBody)),
      body: baselineBody
    }
    expect(bare).toMatchObject(expected)
    expect(floor).toMatchObject(expected)
    // The floor is a router with one route: anything else is its 404, not the route's answer.
    expect(floor.otherStatus).toBe(404)
  }, 60_000)
})
