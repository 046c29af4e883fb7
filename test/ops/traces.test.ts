import { createServer } from "node:http"
import { afterAll, assert, describe, it } from "vitest"
import { adminToken, liveCall, paidKey, type Service, startService } from "./service.ts"

const store = process.env.TEST_DATABASE_URL === undefined ? "PGlite" : "PostgreSQL"

interface Span {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** An OTLP/HTTP receiver: keeps every `/v1/traces` body (JSON) it is sent. */
const startReceiver = () =>
  new Promise<{ readonly url: string; readonly bodies: Array<string>; readonly close: () => void }>(
    (resolve) => {
      const bodies: Array<string> = []
      const server = createServer((request, response) => {
        let body = ""
        request.on("data", (chunk: Buffer) => {
          body += chunk.toString()
        })
        request.on("end", () => {
          if (request.url === "/v1/traces") bodies.push(body)
          response.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resolve({ url: `http://127.0.0.1:${port}`, bodies, close: () => server.close() })
      })
    }
  )

const spansOf = (bodies: ReadonlyArray<string>): ReadonlyArray<Span> =>
  bodies.flatMap((body) =>
    (
      JSON.parse(body) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Span> }> }>
      }
    ).resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
  )

const attribute = (span: Span, key: string) => {
  const value = span.attributes.find((entry) => entry.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

const started: Array<Service> = []
const receivers: Array<() => void> = []
afterAll(() => {
  for (const service of started.splice(0)) service.stop()
  for (const close of receivers.splice(0)) close()
})

describe(`OTLP traces (${store})`, { timeout: 120_000 }, () => {
  it("with OTEL_EXPORTER_OTLP_ENDPOINT: spans of the request, the metered call, SQL and the upstream, no secret", async () => {
    const receiver = await startReceiver()
    receivers.push(receiver.close)
    const service = await startService({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "200"
    })
    started.push(service)
    const { key, account } = await paidKey(service.base)
    const reply = await liveCall(service.base, key, `traces-${Date.now()}`)
    assert.strictEqual(reply.status, 200)
    const receipt = reply.headers.get("x-receipt-id")
    let spans: ReadonlyArray<Span> = []
    for (let tries = 0; tries < 60; tries++) {
      spans = spansOf(receiver.bodies)
      if (
        spans.some((span) => span.name === "meterDataCall") &&
        spans.some((s) => s.name === "upstream.call")
      )
        break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const metered = spans.find((span) => span.name === "meterDataCall")
    assert.isDefined(metered, spans.map((span) => span.name).join(", "))
    assert.strictEqual(attribute(metered!, "operation"), "getProfile")
    assert.strictEqual(attribute(metered!, "account"), account)
    assert.strictEqual(attribute(metered!, "receipt"), receipt)
    const request = spans.find((span) => span.spanId === metered!.parentSpanId)
    assert.isDefined(request, "the metered call's span is a child of the request's")
    assert.strictEqual(attribute(request!, "http.response.status_code"), 200)
    const inTrace = spans.filter((span) => span.traceId === metered!.traceId)
    assert.isTrue(
      inTrace.some((span) => span.name === "upstream.call" && attribute(span, "platform") === "profnet"),
      inTrace.map((span) => span.name).join(", ")
    )
    // The SQL client's spans carry the OpenTelemetry database attributes.
    assert.isTrue(
      inTrace.some((span) => span.attributes.some((entry) => entry.key.startsWith("db."))),
      inTrace.map((span) => span.name).join(", ")
    )
    const everything = receiver.bodies.join("\n")
    assert.notInclude(everything, key, "the bearer key is never exported")
    assert.notInclude(everything, adminToken)
  })
})
