import { assert, describe, layer } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { operations } from "../../src/operations/registry.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"
import { sampleArguments } from "./samples.ts"
import { callTool, connect, modes } from "./support.ts"

const freshIp = ipSequence("10.87")

/** A client that takes URL-mode input requests, recording each and answering as a person would. */
const urlTakingClient = (url: string, auth: { readonly key: string; readonly ip: string }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const requests: Array<{ mode?: string; url?: string; message?: string }> = []
      const client = new Client(
        { name: "svc-mcp-elicitation", version: "1.0.0" },
        { ...modes[0].options, capabilities: { elicitation: { url: {} } } }
      )
      client.setRequestHandler("elicitation/create", async (request) => {
        requests.push(request.params as { mode?: string; url?: string; message?: string })
        return { action: "accept" }
      })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${auth.key}`, "x-forwarded-for": auth.ip } }
      })
      await client.connect(transport)
      return { client, requests }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

describe(`MCP: a call that needs a person offers its page as a URL-mode input request (${storeName})`, () => {
  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "2026-07-28, a client that takes URL requests: the page, then the retried call's own answer",
      () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const { client, requests } = yield* urlTakingClient(`${app.url}/mcp`, { key, ip })
          // A trial key asking for realtime data: TRIAL_CAP_EXCEEDED, fixed by paying or claiming.
          const result = yield* callTool(client, "getTweet", {
            ...sampleArguments.getTweet,
            freshness: "realtime"
          })
          assert.isTrue(result.isError)
          assert.strictEqual(result.problem.code, "TRIAL_CAP_EXCEEDED")
          assert.strictEqual(requests.length, 1)
          assert.strictEqual(requests[0]!.mode, "url")
          assert.strictEqual(requests[0]!.url, result.problem.claim_url ?? result.problem.offer.checkout_url)
          assert.isString(requests[0]!.message)
        })
    )

    for (const mode of modes) {
      it.effect(`${mode.name}, a client without URL requests: the problem as before`, () =>
        Effect.gen(function* () {
          const app = yield* TestApp
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const client = yield* connect(`${app.url}/mcp`, { key, ip }, mode)
          const result = yield* callTool(client, "getTweet", {
            ...sampleArguments.getTweet,
            freshness: "realtime"
          })
          assert.isTrue(result.isError)
          assert.strictEqual(result.problem.code, "TRIAL_CAP_EXCEEDED")
        })
      )
    }
  })
})
