import { IncomingMessage, ServerResponse } from "node:http"
import { Socket } from "node:net"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Deferred, Effect, Exit, Layer, Option, Scope } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig, type AppConfigShape } from "../../src/config.ts"
import { ReceiptSigner } from "../../src/metering/ReceiptSigner.ts"
import { operations } from "../../src/operations/registry.ts"
import { Checkout } from "../../src/payments/Checkout.ts"
import { httpApp, supportLayer } from "../../src/service.ts"
import { Ids } from "../../src/services/Ids.ts"
import { layerWorld, Upstream, UpstreamFailure, UpstreamFaults } from "../../src/upstream/Upstream.ts"
import { WebhookResolver } from "../../src/webhooks/resolver.ts"
import { WebhookTransport } from "../../src/webhooks/transport.ts"
import { testSeed } from "../support/app.ts"
import { type SimChain, simFacilitator, simX402 } from "./chain.ts"
import type { Rng } from "./random.ts"
import { type Receivers, simResolver, simTransport } from "./receivers.ts"
import { makePlug, type Plug, type Store } from "./store.ts"

/** The upstream's state as the fault schedule sets it, shared by every instance (one world). */
export interface UpstreamState {
  latencyMs: number
  errorRate: number
  outage: boolean
  paused: ReadonlyArray<"profnet" | "forum" | "microblog">
  readonly rng: Rng
  /** Calls the simulator holds at the upstream, by instance, in arrival order. */
  readonly held: Array<{ readonly instance: number; readonly release: Deferred.Deferred<void> }>
  /** Instances whose next upstream call is held. */
  readonly holdNext: Set<number>
  calls: number
}

export const makeUpstreamState = (rng: Rng): UpstreamState => ({
  latencyMs: 0,
  errorRate: 0,
  outage: false,
  paused: [],
  rng,
  held: [],
  holdNext: new Set(),
  calls: 0
})

/**
 * The seeded world behind every instance, with the schedule's faults: a call the simulator holds
 * waits until it is released (a slow upstream, or the instance frozen in it); latency is virtual
 * time; errors are drawn from the run's own randomness.
 */
const simUpstream = (state: UpstreamState, instance: number, world: Upstream["Service"]) =>
  Layer.effect(
    Upstream,
    Effect.sync(() =>
      Upstream.of({
        call: (method, ...args) =>
          Effect.suspend(() => {
            state.calls += 1
            const platform = method.startsWith("forum")
              ? "forum"
              : method.startsWith("microblog") || method.startsWith("tweet")
                ? "microblog"
                : "profnet"
            if (state.outage)
              return Effect.fail(new UpstreamFailure({ platform, reason: "outage", retryAfterSeconds: 30 }))
            if (state.paused.includes(platform))
              return Effect.fail(new UpstreamFailure({ platform, reason: "paused", retryAfterSeconds: 60 }))
            const failing = state.errorRate > 0 && state.rng.next() < state.errorRate
            const latency = state.latencyMs > 0 ? Math.floor(state.rng.next() * state.latencyMs) : 0
            const hold = state.holdNext.delete(instance)
            const run = failing
              ? Effect.fail(new UpstreamFailure({ platform, reason: "error", retryAfterSeconds: 5 }))
              : world.call(method, ...args)
            const delayed = latency > 0 ? Effect.andThen(Effect.sleep(latency), run) : run
            if (!hold) return delayed
            return Effect.flatMap(Deferred.make<void>(), (release) => {
              state.held.push({ instance, release })
              return Effect.andThen(Deferred.await(release), delayed)
            })
          })
      })
    )
  ).pipe(Layer.provideMerge(UpstreamFaults.layer))

/** The seeded world, built once per run and shared by every instance (one upstream). */
export const buildWorld = Effect.map(
  Layer.build(layerWorld(testSeed).pipe(Layer.provide(UpstreamFaults.layer))),
  (context) => Context.get(context, Upstream)
)

/**
 * Ids from the run's seed: ids counted per instance and life (`rcpt_i1g2x000007`), secrets from
 * the run's random stream, so a replay hands out the same keys.
 */
const simIds = (instance: number, generation: number, rng: Rng) =>
  Layer.sync(Ids, () => {
    const counters = new Map<string, number>()
    return Ids.of({
      newId: (prefix) =>
        Effect.sync(() => {
          const n = (counters.get(prefix) ?? 0) + 1
          counters.set(prefix, n)
          return `${prefix}_i${instance}g${generation}x${String(n).padStart(6, "0")}`
        }),
      secretBytes: Effect.sync(() => rng.bytes(48))
    })
  })

export interface SimRequest {
  readonly method: string
  readonly path: string
  readonly ip: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

export interface SimReply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

export interface Instance {
  readonly index: number
  readonly generation: number
  readonly plug: Plug
  readonly scope: Scope.Closeable
  readonly handle: (request: SimRequest) => Effect.Effect<SimReply>
  /**
   * The same request as Node's HTTP server hands it over (`NodeHttpServer.makeHandler`): an
   * `IncomingMessage` and a `ServerResponse`, in memory. The OAuth authorization server
   * (oidc-provider) and its sign-in and consent pages read and answer the Node objects themselves.
   */
  readonly handleNode: (request: SimRequest) => Effect.Effect<SimReply>
  /** The operator rotates the receipt signing key on this instance (`ReceiptSigner.rotate`). */
  readonly rotateReceiptKey: Effect.Effect<void>
  /** The operator renews an account's local subscription on this instance (the `renew` operator RPC's `Checkout.renewLocal`). */
  readonly renewSubscription: (
    accountId: string
  ) => Effect.Effect<{ readonly renewed: boolean; readonly current_period_end: number | null }>
}

/**
 * The instance's own receipt signer, counted while it signs: a signature is real asynchronous work
 * (WebCrypto, on Node's thread pool), which finishes in real time, not virtual. The simulator does
 * not move the clock while one is under way (`until` in `simulation.ts`), so how long it takes
 * never shifts virtual time, and a seed replays bit for bit.
 */
const watchedSigner = (signer: ReceiptSigner["Service"], signing: { pending: number }) => {
  const watched = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      signing.pending += 1
      return Effect.ensuring(
        effect,
        Effect.sync(() => {
          signing.pending -= 1
        })
      )
    })
  return ReceiptSigner.of({
    ...signer,
    sign: (receipt) => watched(signer.sign(receipt)),
    signAll: (receipts) => watched(signer.signAll(receipts))
  })
}

/** A reply from what a `ServerResponse` wrote: its status, the header lines it sent, the body. */
const nodeReply = (res: ServerResponse, text: string): SimReply => {
  const headers = new Headers()
  const head: string = (res as unknown as { _header?: string })._header ?? ""
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":")
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.statusCode, headers, text, body }
}

export const simConfig: Partial<AppConfigShape> = {
  trustedProxies: ["127.0.0.1"],
  // The x402 rail, settled on the simulation's own chain (`chain.ts`).
  x402: Option.some(simX402),
  logLevel: "None" as AppConfigShape["logLevel"]
}

/**
 * One whole service instance over the shared store, as a process of its own would be: its own
 * services, caches, housekeeping and workers (their fibers run on the run's TestClock), answering
 * through the service's real HTTP application, in process: no socket.
 */
export const startInstance = (options: {
  readonly store: Store
  readonly index: number
  readonly generation: number
  readonly upstream: UpstreamState
  readonly world: Upstream["Service"]
  readonly rng: Rng
  readonly rewrite: ((sql: string) => string) | undefined
  /** The chain the x402 facilitator settles on (the service's `X402Facilitator` port). */
  readonly chain: SimChain
  /** Receipt signatures under way in every instance (see `watchedSigner`). */
  readonly signing: { pending: number }
  /** The clients' webhook receivers (the service's `WebhookTransport` port), shared by every instance. */
  readonly receivers: Receivers
  readonly config?: Partial<AppConfigShape>
}) =>
  Effect.gen(function* () {
    const plug = makePlug(options.rewrite)
    const database = yield* options.store.forInstance(plug)
    const scope = yield* Scope.make()
    const built = yield* Layer.buildWithScope(
      supportLayer(
        Layer.succeedContext(database),
        simIds(options.index, options.generation, options.rng),
        { pollEvery: "30 seconds", idleMax: "30 seconds" },
        simFacilitator(options.chain)
      ).pipe(
        Layer.provideMerge(simUpstream(options.upstream, options.index, options.world)),
        Layer.provideMerge(
          Layer.mergeAll(
            Layer.succeed(WebhookTransport, simTransport(options.receivers)),
            Layer.succeed(WebhookResolver, simResolver)
          )
        ),
        Layer.provideMerge(NodeHttpServer.layerHttpServices),
        Layer.provideMerge(AppConfig.layerTest({ ...simConfig, ...options.config }))
      ),
      scope
    ).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
    const served = Context.add(
      built,
      ReceiptSigner,
      watchedSigner(Context.get(built, ReceiptSigner), options.signing)
    )
    const app = yield* httpApp(operations).pipe(Effect.provide(served))
    const handle = (request: SimRequest): Effect.Effect<SimReply> => {
      const web = new Request(`http://svc.test${request.path}`, {
        method: request.method,
        headers: { ...request.headers, "x-forwarded-for": request.ip },
        ...(request.body === undefined ? {} : { body: request.body })
      })
      const serverRequest = HttpServerRequest.fromWeb(web).modify({
        remoteAddress: Option.some("127.0.0.1")
      })
      return app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, serverRequest),
        Effect.scoped,
        Effect.provide(served),
        Effect.flatMap((response) =>
          Effect.promise(async () => {
            const answer = HttpServerResponse.toWeb(response)
            const text = await answer.text()
            let body: unknown = text
            try {
              body = JSON.parse(text)
            } catch {}
            return { status: answer.status, headers: answer.headers, text, body }
          })
        ),
        Effect.orDie
      )
    }
    const nodeHandler = yield* NodeHttpServer.makeHandler(app, { scope }).pipe(Effect.provide(served))
    const handleNode = (request: SimRequest): Effect.Effect<SimReply> =>
      Effect.callback<SimReply>((resume) => {
        // An unconnected socket: what the response writes stays in memory (`outputData`).
        const socket = new Socket()
        Object.defineProperty(socket, "remoteAddress", { value: "127.0.0.1" })
        const req = new IncomingMessage(socket)
        const headers: Record<string, string> = { host: "svc.test" }
        for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value
        headers["x-forwarded-for"] = request.ip
        if (request.body !== undefined) headers["content-length"] = String(Buffer.byteLength(request.body))
        req.method = request.method
        req.url = request.path
        req.headers = headers
        req.rawHeaders = Object.entries(headers).flat()
        req.httpVersionMajor = 1
        req.httpVersionMinor = 1
        req.httpVersion = "1.1"
        if (request.body !== undefined) req.push(Buffer.from(request.body))
        req.push(null)
        const res = new ServerResponse(req)
        const chunks: Array<Buffer> = []
        const chunkOf = (chunk: unknown) =>
          typeof chunk === "string" || chunk instanceof Uint8Array ? Buffer.from(chunk) : undefined
        const write = res.write.bind(res)
        res.write = ((chunk: unknown, ...rest: Array<any>) => {
          const bytes = chunkOf(chunk)
          if (bytes !== undefined) chunks.push(bytes)
          return (write as any)(chunk, ...rest)
        }) as typeof res.write
        const end = res.end.bind(res)
        res.end = ((chunk?: unknown, ...rest: Array<any>) => {
          const bytes = chunkOf(chunk)
          if (bytes !== undefined) chunks.push(bytes)
          const ended = (end as any)(chunk, ...rest)
          resume(Effect.sync(() => nodeReply(res, Buffer.concat(chunks).toString("utf8"))))
          return ended
        }) as typeof res.end
        nodeHandler(req, res)
      })
    return {
      index: options.index,
      generation: options.generation,
      plug,
      scope,
      handle,
      handleNode,
      rotateReceiptKey: ReceiptSigner.use((signer) => signer.rotate).pipe(
        Effect.provide(built),
        Effect.asVoid,
        Effect.orDie
      ),
      renewSubscription: (accountId) =>
        Checkout.use((checkout) => checkout.renewLocal(accountId)).pipe(Effect.provide(built), Effect.orDie)
    } satisfies Instance
  })
