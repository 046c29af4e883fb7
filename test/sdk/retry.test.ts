import { assert, describe, it } from "@effect/vitest"
import { HttpClientRequest } from "effect/http"
import { defaultRetryPolicy, isRetriable, retryAfterOf, retryDelayMs } from "../../src/clients/sdk/retry.ts"
import { ConcurrencyLimit, InvalidInput, UpstreamUnavailable } from "../../src/contract/errors.ts"

const policy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 10_000 }

describe("the SDK's retry rule", () => {
  it("waits at least retry_after_seconds, spread by a jittered share of the backoff", () => {
    assert.strictEqual(retryDelayMs(policy, 0, 2, 0), 2_000)
    assert.strictEqual(retryDelayMs(policy, 0, 2, 0.5), 2_050)
    assert.strictEqual(retryDelayMs(policy, 2, 2, 0.5), 2_200)
  })

  it("backs off exponentially with jitter when the server names no wait", () => {
    assert.strictEqual(retryDelayMs(policy, 0, undefined, 0), 50)
    assert.strictEqual(retryDelayMs(policy, 2, undefined, 0.999), 400)
  })

  it("stops after maxAttempts, and rather than wait longer than maxDelayMs", () => {
    assert.isUndefined(retryDelayMs(policy, 3, undefined, 0))
    assert.isUndefined(retryDelayMs(policy, 0, 30, 0))
    assert.isUndefined(retryDelayMs({ ...defaultRetryPolicy, maxAttempts: 1 }, 0, undefined, 0))
  })

  it("retries the retriable problems of data calls; only refusals of other requests", () => {
    const get = HttpClientRequest.get("http://x/v1/profnet/profiles")
    const post = HttpClientRequest.post("http://x/v1/keys")
    const outage = new UpstreamUnavailable({ message: "down", retry_after_seconds: 5 })
    const busy = new ConcurrencyLimit({ message: "busy", retry_after_seconds: 1 })
    assert.isTrue(isRetriable(outage, get))
    assert.isFalse(isRetriable(outage, post))
    assert.isTrue(isRetriable(busy, post))
    assert.isFalse(isRetriable(new InvalidInput({ message: "no" }), get))
    assert.strictEqual(retryAfterOf(outage), 5)
  })
})
