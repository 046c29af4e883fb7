import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto"
import { Deferred, Effect, Exit, Fiber, References, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { receiptPayload, receiptSignatureAlg } from "../../src/contract/receiptSignature.ts"
import { defaultPolicy } from "../../src/domain/policy.ts"
import { webhookEventTypes } from "../../src/domain/webhooks.ts"
import { person } from "../mcp/samples.ts"
import { makeChain, nonceOf, paymentHeader, type SimChain, simX402, walletOf } from "./chain.ts"
import {
  buildWorld,
  type Instance,
  makeUpstreamState,
  type SimReply,
  type SimRequest,
  startInstance,
  type UpstreamState
} from "./instance.ts"
import {
  type Answer,
  alwaysChecks,
  emptyModel,
  ledgerChecks,
  type Model,
  prepareChecks,
  type Violation
} from "./invariants.ts"
import { type Mutation, mutationNamed } from "./mutations.ts"
import { makeRng, type Rng } from "./random.ts"
import { capRefusalChecks } from "./reachInvariants.ts"
import { arrivalChecks, deliveryChecks, makeReceivers, type Receiver, receiverUrl } from "./receivers.ts"
import { type Step, showStep } from "./schedule.ts"
import { openStore, type Store } from "./store.ts"

export interface RunOptions {
  readonly seed: string
  readonly instances: number
  readonly clients: number
  readonly mutation: string | undefined
  readonly pgUrl: string | undefined
  /** Print each event as it happens. */
  readonly verbose: boolean
}

export interface RunResult {
  readonly ok: boolean
  readonly steps: number
  readonly ops: number
  readonly trace: string
  readonly failure: { readonly step: number; readonly violations: ReadonlyArray<Violation> } | undefined
  readonly log: ReadonlyArray<string>
  readonly counts: Record<string, number>
  /**
   * Where the run's wall-clock time went, in ms, each moment in one phase: the steps' own requests,
   * the clock moved between steps (what wakes then: sweepers, workers), the invariant checks (those
   * that hold at every moment, and the ledger's), instances (re)started, and the end (the leases
   * lapsing, the receivers' last hour and more). Real time, so never
   * part of the trace.
   */
  readonly spent: Record<Phase, number>
}

export type Phase = "steps" | "clock" | "always" | "ledger" | "starts" | "end"

/**
 * 2025-12-31T23:40:00Z: where every run's clock starts, so that a run of a few thousand steps
 * crosses a UTC day and a month (the free budget's day, the top-ups' month) as time moves on.
 */
export const epoch = Date.UTC(2025, 11, 31, 23, 40)

interface Client {
  readonly ip: string
  key: string | undefined
  keyId: string | undefined
  account: string | undefined
  token: string | undefined
  email: string | undefined
  /** The client's previous data call, to retry with the same Idempotency-Key. */
  last: { readonly op: number; readonly idem: string; readonly n: number } | undefined
  /** The client's last REST call refused INSUFFICIENT_CREDITS with an x402 payment offered, to pay inline. */
  refused:
    | { readonly op: number; readonly idem: string; readonly n: number; readonly credits: number }
    | undefined
  calls: number
}

/** The data calls of the mix: a REST path and an MCP tool call each. */
const companySlug = person.current_position?.company_slug ?? "acme"
const dataOps: ReadonlyArray<{
  readonly tool: string
  readonly args: (n: number) => Record<string, string | number>
}> = [
  { tool: "getProfile", args: () => ({ identifier: person.public_identifier! }) },
  { tool: "searchPeople", args: (n) => ({ keywords: `engineer ${n % 7}`, limit: 5 }) },
  { tool: "getCompany", args: () => ({ identifier: companySlug }) },
  { tool: "forumSearch", args: (n) => ({ query: `python ${n % 5}` }) },
  { tool: "getCommunity", args: () => ({ community_name: "python" }) },
  { tool: "getProfile", args: () => ({ identifier: person.public_identifier! }) },
  { tool: "searchPeople", args: () => ({ keywords: "engineer", limit: 3 }) },
  { tool: "forumSearch", args: () => ({ query: "python" }) }
]
const restPaths: Record<string, string> = {
  getProfile: "/v1/profnet/profiles",
  searchPeople: "/v1/profnet/search",
  getCompany: "/v1/profnet/companies",
  forumSearch: "/v1/forum/search",
  getCommunity: "/v1/forum/communities"
}

/**
 * The steps after which the ledger's `quiet` checks run at once: those that move money or
 * accounts in a way of their own (a fault in the middle of a call, a payment, a subscription, a
 * top-up, a claim). The others (data calls, races, held calls, keys, the clock) are checked every
 * twentieth step and at the end: what they could break stays broken until then (a ledger does not
 * mend itself), and `always` runs after every step.
 */
const ledgerKinds: ReadonlySet<Step["kind"]> = new Set([
  "crash",
  "freeze",
  "dbdrop",
  "x402",
  "checkout",
  "subscribe",
  "renew",
  "cancel",
  "topup",
  "signin",
  "oauth"
])

/**
 * One turn of the event loop for everything else in the process. In process (PGlite) nothing
 * waits on the outside, so a turn is exact; PostgreSQL answers over the network, so a turn there
 * also gives its answers a moment of real time to arrive (runs on PostgreSQL are checked the same,
 * but not bit for bit: the network's timing decides some interleavings).
 */
const turnOf = (pg: boolean) =>
  pg
    ? Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 2)))
    : Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Runs one schedule from a fresh store; the run's time, ids and randomness all come from the seed. */
export const runSchedule = (schedule: ReadonlyArray<Step>, options: RunOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* TestClock.setTime(epoch)
      const rng = makeRng(options.seed)
      const mutation: Mutation | undefined =
        options.mutation === undefined ? undefined : mutationNamed(options.mutation)
      // On PostgreSQL, what talks to the server directly runs on the real clock (see store.ts).
      const onStore = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        options.pgUrl === undefined ? effect : TestClock.withLive(effect)
      const store: Store = yield* onStore(
        openStore(options.pgUrl, `svc_sim_${Date.now().toString(36)}_${process.pid}`)
      )
      if (mutation?.patch !== undefined) yield* onStore(Effect.provide(mutation.patch, store.context))
      yield* onStore(Effect.provide(prepareChecks, store.context))
      const macrotask = turnOf(options.pgUrl !== undefined)
      const upstream: UpstreamState = makeUpstreamState(rng.fork("upstream"))
      const world = yield* buildWorld
      // The x402 rail's chain: every client's wallet funded from the seed (its poor one holds nothing).
      const chain: SimChain = makeChain()
      const signing = { pending: 0 }
      const receivers = makeReceivers()
      const fundRng = rng.fork("chain")
      for (let c = 0; c < options.clients; c++)
        chain.balances.set(walletOf(c), BigInt(5 + fundRng.int(25)) * 1_000_000n)
      const spent: Record<Phase, number> = { steps: 0, clock: 0, always: 0, ledger: 0, starts: 0, end: 0 }
      let phaseNow: Phase | undefined
      /**
       * Adds the wall-clock time of `effect` to `phase`; a phase inside another (the checks of a
       * held call, the restart of a crashed instance) is taken out of the outer one's time.
       */
      const timed =
        (phase: Phase) =>
        <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
          Effect.suspend(() => {
            const outer = phaseNow
            const from = performance.now()
            phaseNow = phase
            return Effect.ensuring(
              effect,
              Effect.sync(() => {
                const ms = performance.now() - from
                spent[phase] += ms
                if (outer !== undefined) spent[outer] -= ms
                phaseNow = outer
              })
            )
          })
      const generations: Array<number> = []
      const instances: Array<Instance> = []
      const start = (index: number) =>
        Effect.gen(function* () {
          generations[index] = (generations[index] ?? 0) + 1
          instances[index] = yield* startInstance({
            store,
            index,
            generation: generations[index]!,
            upstream,
            world,
            rng: rng.fork(`ids/${index}/${generations[index]}`),
            rewrite: mutation?.rewrite,
            chain,
            signing,
            receivers
          })
        }).pipe(timed("starts"))
      for (let i = 0; i < options.instances; i++) yield* start(i)
      yield* Effect.addFinalizer(() =>
        Effect.forEach(instances, (instance) => Scope.close(instance.scope, Exit.void), { discard: true })
      )

      const log: Array<string> = []
      const hash = createHash("sha256")
      const counts: Record<string, number> = {}
      const count = (what: string) => {
        counts[what] = (counts[what] ?? 0) + 1
      }
      let stepNo = 0
      const event = (line: string) => {
        const entry = `${stepNo} ${line}`
        log.push(entry)
        hash.update(entry).update("\n")
        if (options.verbose) console.log(entry)
      }
      const model: Model = emptyModel()
      const clients: Array<Client> = Array.from({ length: options.clients }, (_, c) => ({
        // Clients share three IPs, so trial keys contend for each IP's free budget.
        ip: `10.0.${c % 3}.1`,
        key: undefined,
        keyId: undefined,
        account: undefined,
        token: undefined,
        email: undefined,
        last: undefined,
        refused: undefined,
        calls: 0
      }))
      const idemRng: Rng = rng.fork("idempotency")
      let ops = 0
      const now = () => TestClock.testClockWith((clock) => Effect.sync(() => clock.currentTimeMillisUnsafe()))

      /**
       * Before the clock moves: the receipt signatures under way finish. They are real work on
       * Node's thread pool (see `watchedSigner` in `instance.ts`), done in real time however the
       * clock stands; moving the clock while one runs would let the machine's speed shift virtual
       * time. Given up after a quarter of a real second (a signer that needs the store while a
       * fiber that waits on the clock holds it), so a run never hangs on it.
       */
      const signed = Effect.promise(async () => {
        const from = performance.now()
        while (signing.pending > 0 && performance.now() - from < 250)
          await new Promise<void>((resolve) => setTimeout(resolve, 1))
      })

      /** Lets every fiber run until `done`, moving the clock when they wait on it. */
      const until = (done: () => boolean, label: string) =>
        Effect.gen(function* () {
          for (let turn = 0; turn < 50_000; turn++) {
            if (done()) return
            yield* macrotask
            if (turn % 16 === 15) {
              yield* signed
              yield* TestClock.adjust(50)
            }
          }
          return yield* Effect.die(new Error(`stuck: ${label}`))
        })

      /**
       * Moves the clock `ms` forward a few minutes at a time, letting what wakes do its work
       * in between (a sweeper wakes once per stretch, not once per interval it slept through).
       */
      const advance = (ms: number, stretch = 300_000) =>
        Effect.gen(function* () {
          for (let left = ms; left > 0; left -= stretch) {
            yield* signed
            yield* TestClock.adjust(Math.min(left, stretch))
            for (let turn = 0; turn < 8; turn++) yield* macrotask
          }
        })

      const send = (instance: number, request: SimRequest) => {
        ops += 1
        return instances[instance]!.handle(request)
      }
      /** Forks a request; its reply (or its loss, when the instance crashed) lands in `out`. */
      const fork = (instance: number, request: SimRequest) =>
        Effect.gen(function* () {
          const out: { reply: SimReply | undefined; done: boolean } = { reply: undefined, done: false }
          const fiber = yield* Effect.forkDetach(
            send(instance, request).pipe(
              Effect.tap((reply) =>
                Effect.sync(() => {
                  out.reply = reply
                })
              ),
              Effect.ensuring(
                Effect.sync(() => {
                  out.done = true
                })
              )
            )
          )
          return { out, fiber }
        })
      const call = (instance: number, request: SimRequest) =>
        Effect.gen(function* () {
          const { out } = yield* fork(instance, request)
          yield* until(() => out.done, `${request.method} ${request.path}`)
          return out.reply!
        })
      const json = (client: Client, method: string, path: string, body?: unknown, bearer?: string) => ({
        method,
        path,
        ip: client.ip,
        headers: {
          ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
          ...(body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })

      const freshIdem = () => `idem-${idemRng.int(2 ** 30).toString(36)}-${idemRng.int(2 ** 30).toString(36)}`

      /** The request of a data call, REST or MCP, with its Idempotency-Key. */
      const dataRequest = (
        client: Client,
        op: number,
        surface: "rest" | "mcp",
        idem: string,
        n = client.calls,
        signed = false
      ): SimRequest => {
        const spec = dataOps[op % dataOps.length]!
        const args = spec.args(n)
        if (surface === "rest") {
          const query = new URLSearchParams(
            Object.entries(args).map(([k, v]): [string, string] => [k, String(v)])
          ).toString()
          return {
            method: "GET",
            path: `${restPaths[spec.tool]}?${query}`,
            ip: client.ip,
            headers: {
              authorization: `Bearer ${client.key}`,
              "idempotency-key": idem,
              ...(signed ? { prefer: "receipt-signature" } : {})
            }
          }
        }
        return {
          method: "POST",
          path: "/mcp",
          ip: client.ip,
          headers: {
            authorization: `Bearer ${client.key}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
            host: "svc.test"
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: spec.tool, arguments: { ...args, idempotency_key: idem } }
          })
        }
      }

      /** Reads a data call's answer, records a 200's receipt for the checks, and logs it. */
      const record = (
        client: Client,
        label: string,
        surface: "rest" | "mcp",
        idem: string,
        reply: SimReply | undefined
      ) => {
        if (reply === undefined) {
          event(`${label} ${surface} ${idem} -> (no answer: the instance crashed)`)
          count("lost")
          return
        }
        let status = reply.status
        let body = reply.body
        if (surface === "mcp") {
          if (options.verbose && reply.status !== 200) console.log(reply.status, reply.text.slice(0, 300))
          const message =
            typeof body === "string"
              ? JSON.parse(
                  body
                    .split("\n")
                    .find((line: string) => line.startsWith("data: "))
                    ?.slice(6) ?? "{}"
                )
              : body
          const result = message?.result
          body = result?.structuredContent ?? result
          // Refused before the tool (a bearer not taken: 401) the answer is HTTP's own.
          status =
            result === undefined
              ? reply.status === 200
                ? 500
                : reply.status
              : result.isError === true
                ? (body?.status ?? 500)
                : 200
        }
        const receipt = body?.receipt
        if (status === 200 && receipt !== undefined && client.account !== undefined) {
          const answer: Answer = {
            account: client.account,
            idem,
            receipt: receipt.id,
            charged: receipt.charged,
            free: receipt.funding?.free_tier ?? 0,
            spent: (receipt.funding?.grant ?? 0) + (receipt.funding?.balance ?? 0),
            replayed: receipt.replayed === true
          }
          model.answers.push(answer)
          count(answer.replayed ? "replays" : "charged")
          event(
            `${label} ${surface} ${idem} -> 200 ${receipt.id} charged=${receipt.charged}${answer.replayed ? " replayed" : ""}`
          )
        } else {
          count(`status ${status}`)
          event(`${label} ${surface} ${idem} -> ${status} ${body?.code ?? ""}`)
        }
      }

      const dataCall = (
        client: Client,
        instance: number,
        op: number,
        surface: "rest" | "mcp",
        retry: boolean,
        signed = false
      ) =>
        Effect.gen(function* () {
          if (client.key === undefined) return event(`call c? i${instance}: no key yet`)
          const again = retry ? client.last : undefined
          const idem = again?.idem ?? freshIdem()
          const useOp = again?.op ?? op
          if (again === undefined) client.calls += 1
          const n = again?.n ?? client.calls
          client.last = { op: useOp, idem, n }
          const reply = yield* call(instance, dataRequest(client, useOp, surface, idem, n, signed))
          if (signed && reply.status === 200) yield* checkSignedReceipt(instance, client, reply.body?.receipt)
          const offered = surface === "rest" ? reply.body?.offer?.x402?.accepts?.[0]?.amount : undefined
          if (reply.status === 402 && typeof offered === "string")
            client.refused = {
              op: useOp,
              idem,
              n,
              credits: Number(BigInt(offered) / BigInt(simX402.atomicPerCredit))
            }
          record(client, `call i${instance}${retry ? " retry" : ""}`, surface, idem, reply)
          if (reply.status === 402 && reply.body?.limit === "key_cap" && client.keyId !== undefined)
            yield* checkCapRefusal(client.keyId, reply.body)
        })

      /** The invariants that hold at every moment; the run stops at the first step that breaks one. */
      let failure: RunResult["failure"]
      const checkAlways = Effect.gen(function* () {
        const found = yield* onStore(Effect.provide(alwaysChecks(yield* now()), store.context))
        if (found.length > 0 && failure === undefined) failure = { step: stepNo, violations: found }
      }).pipe(timed("always"))
      const checkLedger = Effect.gen(function* () {
        const found = yield* onStore(Effect.provide(ledgerChecks(model), store.context))
        if (found.length > 0 && failure === undefined) failure = { step: stepNo, violations: found }
      }).pipe(timed("ledger"))
      /**
       * A signed receipt, checked as a client would: its JWS names a key of GET /.well-known/jwks.json
       * (fetched again for a key not seen yet: a rotation), and signs the receipt as served, without
       * its signature. Keys are random, so nothing of them enters the trace.
       */
      const jwks = new Map<string, KeyObject>()
      const checkSignedReceipt = (instance: number, client: Client, receipt: any) =>
        Effect.gen(function* () {
          const [head = "", payload = "", signature = ""] = String(receipt?.signature ?? "").split(".")
          let header: { alg?: string; kid?: string } = {}
          try {
            header = JSON.parse(Buffer.from(head, "base64url").toString("utf8"))
          } catch {}
          if (header.kid !== undefined && !jwks.has(header.kid)) {
            const published = yield* call(instance, {
              method: "GET",
              path: "/.well-known/jwks.json",
              ip: client.ip
            })
            for (const key of published.body?.keys ?? [])
              jwks.set(key.kid, createPublicKey({ key, format: "jwk" }))
            count("jwks fetched")
          }
          const key = header.kid === undefined ? undefined : jwks.get(header.kid)
          const problem =
            receipt?.signature === undefined
              ? "no signature though asked for"
              : key === undefined
                ? "its key is not in the JWKS"
                : header.alg !== receiptSignatureAlg
                  ? `alg ${header.alg}`
                  : Buffer.from(payload, "base64url").toString("utf8") !== receiptPayload(receipt)
                    ? "it signs something other than the receipt as served"
                    : !verify(
                          null,
                          Buffer.from(`${head}.${payload}`),
                          key,
                          Buffer.from(signature, "base64url")
                        )
                      ? "the signature does not verify with the published key"
                      : undefined
          count(problem === undefined ? "receipts verified" : "receipts refused")
          if (problem !== undefined && failure === undefined)
            failure = {
              step: stepNo,
              violations: [
                {
                  invariant: "every signed receipt verifies against the JWKS and signs the receipt as served",
                  rows: [{ receipt: receipt?.id, problem }],
                  detail: `receipt ${receipt?.id}: ${problem}`
                }
              ]
            }
        })
      /** What the receivers saw since the last look: nothing after a deletion, every signature valid. */
      let arrivalsSeen = 0
      const checkArrivals = () => {
        const found = arrivalChecks(receivers, arrivalsSeen)
        arrivalsSeen = receivers.arrivals.length
        if (found.length > 0 && failure === undefined) failure = { step: stepNo, violations: found }
      }
      /** A spend cap's refusal, checked as it is answered (its period is the moment's). */
      const checkCapRefusal = (key: string, body: { credits_required: number; credits_available: number }) =>
        Effect.gen(function* () {
          count("cap refusals")
          const found = yield* onStore(
            Effect.provide(
              capRefusalChecks({
                key,
                day: Math.floor((yield* now()) / 86_400_000),
                quoted: body.credits_required,
                left: body.credits_available
              }),
              store.context
            )
          )
          if (found.length > 0 && failure === undefined) failure = { step: stepNo, violations: found }
        }).pipe(timed("always"))
      /** The chain's settlements the model has counted: each credits the account it was made for. */
      let settledSeen = 0
      const countSettlements = () => {
        const settled = [...chain.used.entries()]
        for (const [key, used] of settled.slice(settledSeen)) {
          const credits = Number(used.value / BigInt(simX402.atomicPerCredit))
          model.credited.set(used.account, (model.credited.get(used.account) ?? 0) + credits)
          model.settled.push({
            ref: `x402:${simX402.network}:${simX402.asset.toLowerCase()}:${key}`,
            transaction: used.transaction,
            credits,
            account: used.account
          })
        }
        settledSeen = settled.length
      }

      /** Starts a call held in the upstream on `instance`; resolves once it is held (or answered). */
      const holdCall = (client: Client, instance: number, op: number) =>
        Effect.gen(function* () {
          const idem = freshIdem()
          client.calls += 1
          client.last = { op, idem, n: client.calls }
          const heldBefore = upstream.held.length
          upstream.holdNext.add(instance)
          const started = yield* fork(instance, dataRequest(client, op, "rest", idem))
          yield* until(
            () => started.out.done || upstream.held.length > heldBefore,
            "a call to reach the upstream"
          )
          upstream.holdNext.delete(instance)
          const held = upstream.held.length > heldBefore ? upstream.held[upstream.held.length - 1] : undefined
          return { ...started, idem, held, n: client.calls }
        })

      const release = (held: UpstreamState["held"][number] | undefined) =>
        Effect.suspend(() => {
          if (held === undefined) return Effect.void
          const index = upstream.held.indexOf(held)
          if (index !== -1) upstream.held.splice(index, 1)
          return Deferred.succeed(held.release, undefined)
        })

      /** The sign-in code last mailed to `email` (the `outbox`: no SMTP in a run). */
      const mailedCode = (email: string) =>
        onStore(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            return yield* sql<{ body_text: string | null }>`SELECT body_text FROM outbox
              WHERE to_email = ${email.toLowerCase()} ORDER BY created_at DESC, id DESC LIMIT 1`
          }).pipe(Effect.provide(store.context))
        ).pipe(
          Effect.orDie,
          Effect.map((mail) => /code is (\d{6})/.exec(mail[0]?.body_text ?? "")?.[1] ?? "000000")
        )

      /** Email sign-in (and the claim of a trial account) of a client, with the code from the outbox. */
      const signIn = (c: Client, clientNo: number, instance: number) =>
        Effect.gen(function* () {
          if (c.key === undefined) return event(`signin c${clientNo}: no key yet`)
          const email = c.email ?? `c${clientNo}-${c.account}@example.com`
          const started = yield* call(instance, json(c, "POST", "/v1/auth/email/start", { email }, c.key))
          if (started.status !== 202)
            return event(`signin c${clientNo} -> start ${started.status} ${started.body?.code ?? ""}`)
          const code = yield* mailedCode(email)
          const verified = yield* call(
            instance,
            json(c, "POST", "/v1/auth/email/verify", { email, code }, c.key)
          )
          if (verified.status === 200) {
            c.email = email
            c.token = verified.body.management_token
            if (
              verified.body.claimed === c.account &&
              verified.body.grant_credits > 0 &&
              c.account !== undefined
            )
              model.credited.set(
                c.account,
                (model.credited.get(c.account) ?? 0) + verified.body.grant_credits
              )
          }
          event(
            `signin c${clientNo} -> ${verified.status} claimed=${verified.body?.claimed ?? "-"} grant=${verified.body?.grant_credits ?? "-"}`
          )
        })

      /**
       * An x402 payment (see the step): the client pays, inline in the retry of a call refused
       * INSUFFICIENT_CREDITS or at POST /v1/credits/x402, with the fault the step draws; after a
       * fault it sends the same payment again elsewhere, with the chain and facilitator well.
       */
      let x402Payments = 0
      /** The clients' subscriptions, by account: credits a period, and whether set to cancel. */
      const subscriptions = new Map<string, { readonly perMonth: number; canceled: boolean }>()
      const x402Step = (step: Extract<Step, { kind: "x402" }>) =>
        Effect.gen(function* () {
          const c = clients[step.client % clients.length]!
          if (c.key === undefined || c.account === undefined) return event(`x402 c${step.client}: no key yet`)
          const label = `x402 c${step.client} ${step.mode}${step.mode === "inline" && c.refused === undefined ? " up front" : ""} ${step.fault}`
          let credits = step.credits
          let request: SimRequest
          let idem: string | undefined
          const refused = c.refused
          if (step.mode === "inline") {
            // The retry of the call refused for credits, same Idempotency-Key; without one, a new
            // call paid for up front.
            c.refused = undefined
            idem = refused?.idem ?? freshIdem()
            if (refused === undefined) c.calls += 1
            const n = refused?.n ?? c.calls
            const op = refused?.op ?? 1
            c.last = { op, idem, n }
            if (refused !== undefined) credits = refused.credits
            request = dataRequest(c, op, "rest", idem, n)
          } else request = json(c, "POST", "/v1/credits/x402", { credits }, c.key)
          x402Payments += 1
          const header = paymentHeader(chain, {
            from: walletOf(step.client, step.fault === "refused"),
            credits,
            nonce: nonceOf(x402Payments, options.seed),
            account: c.account
          })
          const paying: SimRequest = {
            ...request,
            headers: { ...request.headers, "payment-signature": header }
          }
          const outcome = (reply: SimReply | undefined) =>
            reply === undefined
              ? "lost"
              : `${reply.status} ${reply.body?.reason ?? reply.body?.code ?? ""}${reply.headers.has("payment-response") ? " paid" : ""}`
          const answered = (at: number, reply: SimReply | undefined, what: string) => {
            if (idem !== undefined) record(c, `${label} ${what} i${at}`, "rest", idem, reply)
            else event(`${label} ${what} i${at} ${credits} credits -> ${outcome(reply)}`)
          }
          chain.down = step.fault === "down"
          chain.afterSettle = step.fault === "lose" ? "lose" : step.fault === "crash" ? "hang" : "answer"
          chain.hanging = false
          const first = yield* fork(step.instance, paying)
          yield* until(() => first.out.done || chain.hanging, "an x402 payment")
          chain.down = false
          chain.afterSettle = "answer"
          countSettlements()
          if (chain.hanging) {
            // Settled on the chain, its instance crashes before crediting it.
            chain.hanging = false
            event(`${label} i${step.instance}: settled, the instance crashes before crediting it`)
            const victim = instances[step.instance]!
            victim.plug.dead = true
            yield* Effect.forkDetach(Fiber.interrupt(first.fiber))
            yield* Effect.forkDetach(Scope.close(victim.scope, Exit.void))
            yield* Effect.orDie(start(step.instance))
            yield* advance(5_000, 1_000)
            count("crashes")
          } else answered(step.instance, first.out.reply, "paid")
          const again = step.fault === "down" || step.fault === "lose" || step.fault === "crash"
          let last = first.out.reply
          if (again) {
            // The client sends the same payment again (the same Idempotency-Key inline) elsewhere.
            last = yield* call(step.other, paying)
            countSettlements()
            answered(step.other, last, "again")
          }
          if (step.replay && last !== undefined && last.status === 200) {
            const replay = yield* call(step.other, paying)
            countSettlements()
            answered(step.other, replay, "replayed")
          }
          count(`x402 ${step.fault}`)
        })

      /**
       * A `production` subscription on the local rail: bought at a checkout, renewed by the operator
       * (one more period, its credits), set to cancel at the client's portal (the next renewal ends
       * it: the account goes to flex). The model credits what was paid: the first period, and each
       * renewal of a subscription the client did not cancel.
       */
      const subscriptionStep = (step: Extract<Step, { kind: "subscribe" | "renew" | "cancel" }>) =>
        Effect.gen(function* () {
          // Renewing and cancelling act on a subscription: the step's client's, else the next
          // client's that has one.
          let clientNo = step.client % clients.length
          if (step.kind !== "subscribe")
            for (let k = 0; k < clients.length; k++) {
              const n = (step.client + k) % clients.length
              const account = clients[n]!.account
              if (account !== undefined && subscriptions.has(account)) {
                clientNo = n
                break
              }
            }
          const c = clients[clientNo]!
          if (c.key === undefined || c.account === undefined)
            return event(`${step.kind} c${clientNo}: no key yet`)
          const account = c.account
          switch (step.kind) {
            case "subscribe": {
              const started = yield* call(
                step.instance,
                json(c, "POST", "/v1/checkout", { pack: "production" }, c.key)
              )
              if (started.status !== 200)
                return event(`subscribe c${clientNo} -> ${started.status} ${started.body?.code ?? ""}`)
              const paid = yield* call(step.instance, {
                method: "POST",
                path: `${new URL(started.body.checkout_url).pathname}/pay`,
                ip: c.ip,
                headers: { "content-type": "application/x-www-form-urlencoded" },
                body: ""
              })
              if (paid.status === 303) {
                model.paid.set(started.body.session_id, account)
                const perMonth = started.body.credits_per_month ?? 0
                model.credited.set(account, (model.credited.get(account) ?? 0) + perMonth)
                subscriptions.set(account, { perMonth, canceled: false })
              }
              return event(`subscribe c${clientNo} ${started.body.session_id} -> ${paid.status}`)
            }
            case "renew": {
              const held = subscriptions.get(account)
              if (held === undefined) return event(`renew c${clientNo}: no subscription`)
              const renewed = yield* instances[step.instance]!.renewSubscription(account)
              if (held.canceled) subscriptions.delete(account)
              else if (renewed.renewed)
                model.credited.set(account, (model.credited.get(account) ?? 0) + held.perMonth)
              count(held.canceled ? "subscriptions ended" : "subscriptions renewed")
              return event(
                `renew c${clientNo}${held.canceled ? " (canceled)" : ""} -> renewed=${renewed.renewed} until ${
                  renewed.current_period_end === null
                    ? "-"
                    : new Date(renewed.current_period_end).toISOString().slice(0, 10)
                }`
              )
            }
            case "cancel": {
              const held = subscriptions.get(account)
              if (held === undefined) return event(`cancel c${clientNo}: no subscription`)
              if (c.token === undefined) yield* signIn(c, clientNo, step.instance)
              if (c.token === undefined) return event(`cancel c${clientNo}: not signed in`)
              const portal = yield* call(step.instance, json(c, "POST", "/v1/portal", undefined, c.token))
              if (portal.status !== 200) return event(`cancel c${clientNo} -> portal ${portal.status}`)
              const session = new URL(portal.body.url).searchParams.get("session") ?? ""
              const canceled = yield* call(step.instance, {
                method: "POST",
                path: "/portal/cancel",
                ip: c.ip,
                headers: { "content-type": "application/x-www-form-urlencoded" },
                body: new URLSearchParams({ session }).toString()
              })
              if (canceled.status === 303) held.canceled = true
              event(`cancel c${clientNo} -> ${canceled.status}`)
              // The period's end: the operator's renewal ends a canceled subscription instead.
              const ended = yield* instances[step.instance]!.renewSubscription(account)
              if (held.canceled) subscriptions.delete(account)
              else if (ended.renewed)
                model.credited.set(account, (model.credited.get(account) ?? 0) + held.perMonth)
              count(held.canceled ? "subscriptions ended" : "subscriptions renewed")
              return event(`cancel c${clientNo}: the period ends -> renewed=${ended.renewed}`)
            }
          }
        })

      /**
       * A client's webhook receiver (see the step). An endpoint is registered for every event with a
       * management token (the client signs in first); a client with one asks for a test ping
       * instead. The receivers answer every instance's delivery workers (`receivers.ts`).
       */
      let registrations = 0
      const webhookStep = (step: Extract<Step, { kind: "webhook" }>) =>
        Effect.gen(function* () {
          const c = clients[step.client % clients.length]!
          const label = `webhook c${step.client} ${step.action}`
          const receiver = receivers.byClient.get(step.client)
          const live =
            receiver !== undefined && receiver.deletedAt === undefined && receiver.account === c.account
              ? receiver
              : undefined
          switch (step.action) {
            case "register": {
              if (c.key === undefined || c.account === undefined) return event(`${label}: no key yet`)
              if (c.token === undefined) yield* signIn(c, step.client, step.instance)
              if (c.token === undefined) return event(`${label}: not signed in`)
              if (live !== undefined) {
                const tested = yield* call(
                  step.instance,
                  json(c, "POST", "/v1/webhooks/test", { webhook_id: live.webhookId }, c.token)
                )
                return event(
                  `${label}: test ${live.webhookId} -> ${tested.status} ${tested.body?.code ?? ""}`
                )
              }
              registrations += 1
              const url = receiverUrl(step.client, registrations)
              const events = webhookEventTypes.filter((type) => type !== "ping")
              const created = yield* call(
                step.instance,
                json(c, "POST", "/v1/webhooks", { url, events }, c.token)
              )
              if (created.status === 200 || created.status === 201) {
                const made: Receiver = {
                  client: step.client,
                  account: c.account,
                  url,
                  secret: created.body.secret,
                  webhookId: created.body.webhook_id,
                  mode: "ok",
                  latencyMs: 0,
                  deletedAt: undefined
                }
                receivers.byUrl.set(url, made)
                receivers.byClient.set(step.client, made)
              }
              return event(
                `${label} -> ${created.status} ${created.body?.webhook_id ?? created.body?.code ?? ""}`
              )
            }
            case "delete": {
              if (live === undefined) return event(`${label}: no endpoint`)
              if (c.token === undefined) return event(`${label}: not signed in`)
              const deleted = yield* call(
                step.instance,
                json(c, "POST", "/v1/webhooks/delete", { webhook_id: live.webhookId }, c.token)
              )
              if (deleted.status === 200) live.deletedAt = yield* now()
              return event(`${label} ${live.webhookId} -> ${deleted.status} ${deleted.body?.code ?? ""}`)
            }
            default: {
              if (live === undefined) return event(`${label}: no endpoint`)
              live.mode = step.action === "recover" ? "ok" : step.action
              live.latencyMs = step.latencyMs
              return event(
                `${label} ${live.webhookId}${step.action === "slow" ? ` ${step.latencyMs} ms` : ""}`
              )
            }
          }
        })

      /**
       * A person connects an MCP app through the real authorization server (see the step), as a
       * browser and the app would: the requests go through `handleNode` (oidc-provider answers the
       * Node objects itself) with the browser's cookies, the sign-in code from the outbox. The
       * library keeps its own clock and randomness (real time for its records' lifetimes, random
       * uids, codes and tokens): none of them enters the trace, and its lifetimes (a code's minute,
       * an interaction's hour) are far longer than a step takes in real time. The waits never move
       * the virtual clock (`callNode`), so how long the library takes cannot shift virtual time.
       */
      const oauthRedirect = "http://127.0.0.1:7/callback"
      const oauthResource = "http://svc.test/mcp/profnet"
      const oauthRng = rng.fork("oauth")
      let oauthClient: string | undefined
      let oauthFlows = 0
      const broken = (invariant: string, detail: string) => {
        if (failure === undefined)
          failure = { step: stepNo, violations: [{ invariant, rows: [detail], detail }] }
      }
      /** A request through `handleNode`, waited for without moving the clock (at most 10 s of real time). */
      const callNode = (instance: number, request: SimRequest) =>
        Effect.gen(function* () {
          ops += 1
          const out: { reply: SimReply | undefined; done: boolean } = { reply: undefined, done: false }
          yield* Effect.forkDetach(
            instances[instance]!.handleNode(request).pipe(
              Effect.tap((reply) =>
                Effect.sync(() => {
                  out.reply = reply
                })
              ),
              Effect.ensuring(
                Effect.sync(() => {
                  out.done = true
                })
              )
            )
          )
          const from = performance.now()
          while (!out.done) {
            if (performance.now() - from > 10_000)
              return yield* Effect.die(new Error(`stuck: ${request.method} ${request.path.split("?")[0]}`))
            yield* macrotask
          }
          return out.reply!
        })
      const oauthStep = (step: Extract<Step, { kind: "oauth" }>) =>
        Effect.gen(function* () {
          const c = clients[step.client % clients.length]!
          const label = `oauth c${step.client} ${step.decision}`
          if (c.key === undefined || c.account === undefined) return event(`${label}: no key yet`)
          if (c.token === undefined || c.email === undefined) yield* signIn(c, step.client, step.instance)
          if (c.token === undefined || c.email === undefined) return event(`${label}: not signed in`)
          const email = c.email
          if (oauthClient === undefined) {
            const registered = yield* callNode(step.instance, {
              ...json(c, "POST", "/oauth/register", {
                client_name: "Sim Agent",
                redirect_uris: [oauthRedirect],
                grant_types: ["authorization_code", "refresh_token"],
                response_types: ["code"],
                token_endpoint_auth_method: "none"
              })
            })
            if (registered.status !== 201) return event(`${label}: register -> ${registered.status}`)
            oauthClient = String(registered.body.client_id)
          }
          const clientId = oauthClient
          // The browser: one cookie jar, redirects followed by hand.
          const jar = new Map<string, string>()
          const browse = (instance: number, method: string, url: string, form?: Record<string, string>) =>
            Effect.gen(function* () {
              const target = new URL(url, "http://svc.test")
              const headers: Record<string, string> = {}
              if (jar.size > 0)
                headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ")
              if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded"
              const reply = yield* callNode(instance, {
                method,
                path: `${target.pathname}${target.search}`,
                ip: c.ip,
                headers,
                ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() })
              })
              for (const cookie of reply.headers.getSetCookie()) {
                const [pair = ""] = cookie.split(";")
                const at = pair.indexOf("=")
                const name = pair.slice(0, at)
                const value = pair.slice(at + 1)
                if (value === "" || /expires=Thu, 01 Jan 1970/i.test(cookie)) jar.delete(name)
                else jar.set(name, value)
              }
              return reply
            })
          oauthFlows += 1
          const verifier = Buffer.from(oauthRng.bytes(32)).toString("base64url")
          const state = `s${oauthFlows}`
          const authorize = new URL("http://svc.test/oauth/authorize")
          for (const [name, value] of Object.entries({
            response_type: "code",
            client_id: clientId,
            redirect_uri: oauthRedirect,
            code_challenge: createHash("sha256").update(verifier).digest("base64url"),
            code_challenge_method: "S256",
            scope: "mcp",
            state,
            resource: oauthResource
          }))
            authorize.searchParams.set(name, value)
          const started = yield* browse(step.instance, "GET", authorize.href)
          const login = started.headers.get("location") ?? ""
          if (started.status !== 303 || !/\/login\/[\w-]+$/.test(login))
            return event(`${label} -> authorize ${started.status}`)
          const loginPath = new URL(login, "http://svc.test").pathname
          const emailed = yield* browse(step.instance, "POST", `${loginPath}/email`, { email })
          if (emailed.status !== 200) return event(`${label} -> email ${emailed.status}`)
          const code = yield* mailedCode(email)
          const signedIn = yield* browse(step.instance, "POST", `${loginPath}/code`, { email, code })
          if (signedIn.status !== 303) return event(`${label} -> code ${signedIn.status}`)
          const consent = yield* browse(step.instance, "GET", loginPath)
          const csrf = /name="csrf" value="([^"]+)"/.exec(consent.text)?.[1]
          const offered = [...consent.text.matchAll(/name="account_id" value="([^"]+)"/g)].map((m) => m[1]!)
          if (consent.status !== 200 || csrf === undefined || offered.length === 0)
            return event(`${label} -> consent page ${consent.status}`)
          const account = offered.includes(c.account) ? c.account : offered[0]!
          let answer = yield* browse(step.instance, "POST", `${loginPath}/consent`, {
            csrf,
            account_id: account,
            decision: step.decision
          })
          for (let hop = 0; hop < 5; hop++) {
            const next = answer.headers.get("location")
            if (next === null || next.startsWith(oauthRedirect)) break
            answer = yield* browse(step.instance, "GET", next)
          }
          const back = URL.canParse(answer.headers.get("location") ?? "")
            ? new URL(answer.headers.get("location")!)
            : undefined
          if (
            back === undefined ||
            !back.href.startsWith(oauthRedirect) ||
            back.searchParams.get("state") !== state
          )
            return event(`${label} -> consent ${answer.status}, not back at the app`)
          const granted = back.searchParams.get("code")
          if (step.decision === "deny") {
            if (granted !== null || back.searchParams.get("error") !== "access_denied")
              broken(
                "a denied consent gives the app no code, only access_denied",
                `${label}: back with code=${granted === null ? "none" : "a code"} error=${back.searchParams.get("error")}`
              )
            count("oauth denied")
            return event(`${label} -> back with ${back.searchParams.get("error")}`)
          }
          if (granted === null) return event(`${label} -> back with ${back.searchParams.get("error")}`)
          // The app's part: the code for a token (on another instance); later the same code again.
          const exchange = (instance: number) =>
            callNode(instance, {
              method: "POST",
              path: "/oauth/token",
              ip: c.ip,
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({
                grant_type: "authorization_code",
                code: granted,
                code_verifier: verifier,
                client_id: clientId,
                redirect_uri: oauthRedirect,
                resource: oauthResource
              }).toString()
            })
          const token = yield* exchange(step.other)
          const accessToken: string | undefined = token.body?.access_token
          if (token.status !== 200 || accessToken === undefined)
            return event(`${label} -> token ${token.status} ${token.body?.error ?? ""}`)
          count("oauth tokens")
          // The app calls a tool with the token: charged to the account that consented, no other
          // (the answers' check: its receipt is of that account).
          const holder: Client = { ...c, account, key: accessToken }
          const tool = (idem: string) => {
            const request = dataRequest(holder, step.op, "mcp", idem)
            return { ...request, path: "/mcp/profnet" }
          }
          const idem = freshIdem()
          const used = yield* call(step.other, tool(idem))
          const before = model.answers.length
          record(holder, `${label} i${step.other} token`, "mcp", idem, used)
          const charged = model.answers[before]
          if (charged !== undefined) {
            // The receipt names the app as its key: the store must have charged the account that
            // consented, on that account's app.
            const rows = yield* onStore(
              Effect.gen(function* () {
                const sql = yield* SqlClient.SqlClient
                return yield* sql<{ account_id: string; app_account: string | null }>`SELECT c.account_id,
                  a.account_id AS app_account FROM calls c LEFT JOIN oauth_apps a ON a.id = c.key_id
                  WHERE c.id = ${charged.receipt}`
              }).pipe(Effect.provide(store.context))
            ).pipe(Effect.orDie)
            const found = rows[0]
            if (found === undefined || found.account_id !== account || found.app_account !== account)
              broken(
                "an access token spends only the account that consented, through its app",
                `${label}: ${charged.receipt} charged to ${found?.account_id} through an app of ${found?.app_account}, the token is ${account}'s`
              )
          }
          if (!step.revoke) {
            // The code sent again (an attacker's replay): no second token (and the library
            // revokes what the code gave).
            const again = yield* exchange(step.instance)
            event(`${label}: the code again -> ${again.status} ${again.body?.error ?? ""}`)
            if (again.status === 200 || again.body?.access_token !== undefined)
              broken("an authorization code gives one token", `${label}: the code was exchanged twice`)
            return
          }
          const listed = yield* call(
            step.instance,
            json(c, "GET", `/v1/apps?account_id=${account}`, undefined, c.token)
          )
          const apps: Array<{ app_id: string; client_name: string }> = listed.body?.apps ?? []
          const app = apps.find((candidate) => candidate.client_name === "Sim Agent")
          if (app === undefined) return event(`${label}: revoke, no app listed (${listed.status})`)
          const revoked = yield* call(
            step.instance,
            json(c, "POST", "/v1/apps/revoke", { app_id: app.app_id, account_id: account }, c.token)
          )
          event(`${label}: revoke ${app.app_id} -> ${revoked.status}`)
          if (revoked.status !== 200) return
          const after = freshIdem()
          const refused = yield* call(step.other, tool(after))
          const answered = model.answers.length
          record(holder, `${label} i${step.other} revoked token`, "mcp", after, refused)
          count("oauth revoked")
          if (model.answers.length > answered)
            broken(
              "the token of a disconnected app is refused",
              `${label}: ${app.app_id} revoked, its token still answered`
            )
        })

      const runStep = (step: Step): Effect.Effect<void, never, Scope.Scope> =>
        Effect.gen(function* () {
          const client = "client" in step ? clients[step.client % clients.length]! : undefined
          switch (step.kind) {
            case "mint": {
              const c = client!
              const reply = yield* call(step.instance, json(c, "POST", "/v1/keys/mint"))
              if (reply.status === 200) {
                c.key = reply.body.key
                c.account = reply.body.account_id
                c.keyId = undefined
                c.token = undefined
                c.email = undefined
                c.last = undefined
                c.refused = undefined
              }
              event(
                `mint c${step.client} i${step.instance} -> ${reply.status} ${reply.body?.account_id ?? reply.body?.code ?? ""}`
              )
              return
            }
            case "call":
              return yield* dataCall(
                client!,
                step.instance,
                step.op,
                step.surface,
                step.retry && client!.last !== undefined,
                step.signed
              )
            case "race": {
              const c = client!
              if (c.key === undefined) return event(`race c${step.client}: no key yet`)
              const idem = freshIdem()
              c.calls += 1
              c.last = { op: step.op, idem, n: c.calls }
              const a = yield* fork(step.instances[0], dataRequest(c, step.op, "rest", idem))
              const b = yield* fork(step.instances[1], dataRequest(c, step.op, "mcp", idem))
              yield* until(() => a.out.done && b.out.done, "a race")
              record(c, `race c${step.client} i${step.instances[0]}`, "rest", idem, a.out.reply)
              record(c, `race c${step.client} i${step.instances[1]}`, "mcp", idem, b.out.reply)
              return
            }
            case "held": {
              const c = client!
              if (c.key === undefined) return event(`held c${step.client}: no key yet`)
              const first = yield* holdCall(c, step.instance, 1)
              if (first.held === undefined) {
                record(
                  c,
                  `held c${step.client} i${step.instance} (not held)`,
                  "rest",
                  first.idem,
                  first.out.reply
                )
                return
              }
              event(`held c${step.client} i${step.instance} ${first.idem} in the upstream`)
              // The same account calls again elsewhere while the first is in flight (turned away, or
              // held too if a bug let it through), then retries the held key there.
              const second = yield* holdCall(c, step.other, 0)
              yield* checkAlways
              yield* release(second.held)
              yield* until(() => second.out.done, "a second call")
              record(c, `held c${step.client} i${step.other} second`, "rest", second.idem, second.out.reply)
              c.last = { op: 1, idem: first.idem, n: first.n }
              yield* dataCall(c, step.other, 1, "rest", true)
              yield* checkAlways
              yield* TestClock.adjust(step.latencyMs)
              yield* release(first.held)
              yield* until(() => first.out.done, "a held call")
              record(
                c,
                `held c${step.client} i${step.instance} released`,
                "rest",
                first.idem,
                first.out.reply
              )
              return
            }
            case "freeze": {
              const c = client!
              if (c.key === undefined) return event(`freeze c${step.client}: no key yet`)
              const first = yield* holdCall(c, step.instance, 3)
              if (first.held === undefined) {
                record(
                  c,
                  `freeze c${step.client} i${step.instance} (not held)`,
                  "rest",
                  first.idem,
                  first.out.reply
                )
                return
              }
              event(`freeze c${step.client} i${step.instance} ${first.idem} frozen past its lease`)
              // Past the lease (60 s) and a sweep: another instance refunds it, and the retry runs there.
              yield* advance(70_000, 5_000)
              yield* checkAlways
              c.last = { op: 3, idem: first.idem, n: first.n }
              yield* dataCall(c, step.other, 3, "rest", true)
              yield* release(first.held)
              yield* until(() => first.out.done, "a frozen call")
              record(c, `freeze c${step.client} i${step.instance} woke`, "rest", first.idem, first.out.reply)
              return
            }
            case "crash": {
              const c = client!
              const victim = instances[step.instance]!
              const lost = c.key === undefined ? undefined : yield* holdCall(c, step.instance, 1)
              if (lost !== undefined && lost.held === undefined)
                record(
                  c,
                  `crash c${step.client} i${step.instance} (not held)`,
                  "rest",
                  lost.idem,
                  lost.out.reply
                )
              event(
                `crash i${step.instance}${lost?.held !== undefined ? ` with ${lost.idem} in flight` : ""}`
              )
              victim.plug.dead = true
              // Interrupted, not awaited: what its finalizers still try fails on the cut connection
              // (and may wait for the clock, which moves on below).
              if (lost !== undefined) {
                yield* Effect.forkDetach(Fiber.interrupt(lost.fiber))
                const index = lost.held === undefined ? -1 : upstream.held.indexOf(lost.held)
                if (index !== -1) upstream.held.splice(index, 1)
              }
              yield* Effect.forkDetach(Scope.close(victim.scope, Exit.void))
              yield* Effect.orDie(start(step.instance))
              // Past the lease: the sweepers (the restarted instance's too) refund what the crash left.
              yield* advance(70_000, 5_000)
              if (lost !== undefined && c.key !== undefined) {
                c.last = { op: 1, idem: lost.idem, n: lost.n }
                yield* dataCall(c, step.instance, 1, "rest", true)
              }
              count("crashes")
              return
            }
            case "dbdrop": {
              const c = client!
              if (c.key === undefined) return event(`dbdrop c${step.client}: no key yet`)
              const plug = instances[step.instance]!.plug
              const before = plug.drops
              plug.dropAt = step.at
              yield* dataCall(c, step.instance, 2 + (c.calls % 3), "rest", false)
              plug.dropAt = undefined
              event(
                `dbdrop i${step.instance} at ${step.at}: ${plug.drops > before ? "dropped" : "no transaction"}`
              )
              if (plug.drops > before) count("db drops")
              // The client retries with the same key once the connection is back.
              yield* dataCall(c, step.instance, 0, "rest", true)
              return
            }
            case "x402":
              return yield* x402Step(step)
            case "subscribe":
            case "renew":
            case "cancel":
              return yield* subscriptionStep(step)
            case "webhook":
              return yield* webhookStep(step)
            case "oauth":
              return yield* oauthStep(step)
            case "receiptkey": {
              yield* instances[step.instance]!.rotateReceiptKey
              return event(`receiptkey i${step.instance}: rotated`)
            }
            case "fault": {
              upstream.latencyMs = step.latencyMs
              upstream.errorRate = step.errorRate
              upstream.outage = step.outage
              upstream.paused = step.paused
              event(showStep(step))
              return
            }
            case "tick": {
              yield* advance(step.ms)
              event(`tick ${step.ms}`)
              return
            }
            case "signin":
              return yield* signIn(client!, step.client, step.instance)
            case "checkout": {
              const c = client!
              if (c.key === undefined || c.account === undefined)
                return event(`checkout c${step.client}: no key yet`)
              const started = yield* call(
                step.instances[0],
                json(c, "POST", "/v1/checkout", { pack: "flex" }, c.key)
              )
              if (started.status !== 200)
                return event(`checkout c${step.client} -> ${started.status} ${started.body?.code ?? ""}`)
              const path = `${new URL(started.body.checkout_url).pathname}/pay`
              const pay = (instance: number) =>
                call(instance, {
                  method: "POST",
                  path,
                  ip: c.ip,
                  headers: { "content-type": "application/x-www-form-urlencoded" },
                  body: ""
                })
              const a = yield* pay(step.instances[0])
              const b = yield* pay(step.instances[1])
              if (a.status === 303 || b.status === 303) {
                model.paid.set(started.body.session_id, c.account)
                model.credited.set(
                  c.account,
                  (model.credited.get(c.account) ?? 0) + (started.body.credits ?? 0)
                )
              }
              event(
                `checkout c${step.client} ${started.body.session_id} paid twice -> ${a.status} ${b.status}`
              )
              return
            }
            case "cap": {
              const c = client!
              // Only a signed-in client manages keys: one that is not signs in first.
              if (c.token === undefined) yield* signIn(c, step.client, step.instance)
              if (c.token === undefined) return event(`cap c${step.client}: not signed in`)
              const created = yield* call(
                step.instance,
                json(
                  c,
                  "POST",
                  "/v1/keys",
                  {
                    label: `capped ${step.cap} per ${step.period}`,
                    spend_cap_credits: step.cap,
                    cap_period: step.period
                  },
                  c.token
                )
              )
              if (created.status === 201) {
                c.key = created.body.key
                c.keyId = created.body.key_id
                c.last = undefined
              }
              event(
                `cap c${step.client} ${step.cap} per ${step.period} -> ${created.status} ${created.body?.key_id ?? created.body?.code ?? ""}`
              )
              return
            }
            case "topup": {
              const c = client!
              if (c.token === undefined) return event(`topup c${step.client}: not signed in`)
              const armed = yield* call(
                step.instance,
                json(
                  c,
                  "POST",
                  "/v1/topup",
                  { pack: "flex", below_credits: 1_000_000, monthly_max_usd_cents: 4_000 },
                  c.token
                )
              )
              event(`topup c${step.client} -> ${armed.status} ${armed.body?.code ?? ""}`)
              return
            }
            case "rotate":
            case "revoke": {
              const c = client!
              if (c.token === undefined) return event(`${step.kind} c${step.client}: not signed in`)
              const listed = yield* call(step.instance, json(c, "GET", "/v1/keys", undefined, c.token))
              const keys: Array<{ key_id: string; revoked_at?: string | null }> = listed.body?.keys ?? []
              const live = keys.filter((key) => key.revoked_at == null)
              const target = live.find((key) => key.key_id === c.keyId) ?? live[0]
              if (target === undefined) return event(`${step.kind} c${step.client}: no live key`)
              const reply = yield* call(
                step.instance,
                json(c, "POST", `/v1/keys/${step.kind}`, { key_id: target.key_id }, c.token)
              )
              if (reply.status === 200 && step.kind === "rotate") {
                c.key = reply.body.key
                c.keyId = reply.body.key_id
              }
              if (reply.status === 200 && step.kind === "revoke") {
                // The client makes itself a new key to go on with.
                const created = yield* call(
                  step.instance,
                  json(c, "POST", "/v1/keys", { label: "after revoke" }, c.token)
                )
                if (created.status === 201) {
                  c.key = created.body.key
                  c.keyId = created.body.key_id
                } else c.key = undefined
              }
              c.last = undefined
              event(
                `${step.kind} c${step.client} ${target.key_id} -> ${reply.status} ${reply.body?.code ?? ""}`
              )
              return
            }
          }
        })

      for (const step of schedule) {
        stepNo += 1
        count(step.kind)
        if (options.verbose) console.log(`${stepNo} > ${showStep(step)}`)
        yield* timed("steps")(runStep(step))
        // Time moves on between steps; the workers (top-ups, sweepers) get their turn.
        yield* timed("clock")(advance(250))
        yield* checkAlways
        checkArrivals()
        // The ledger's checks read whole tables: after every step that can break them in its own
        // way (`ledgerKinds`), every twentieth step otherwise, and at the end.
        const ledgerNow = stepNo % 20 === 0 || ledgerKinds.has(step.kind)
        if (failure === undefined && ledgerNow) yield* checkLedger
        if (failure !== undefined) break
      }
      // Every held call let go, and the leases run out: nothing may stay stranded.
      for (const held of [...upstream.held]) yield* release(held)
      if (failure === undefined) {
        yield* timed("end")(advance(100_000, 5_000))
        stepNo += 1
        yield* checkAlways
        if (failure === undefined) yield* checkLedger
      }
      // Every receiver recovers, and the deliveries have the longest wait of a retry (an hour) and
      // more: each event of a registered endpoint is delivered, as recorded.
      if (failure === undefined && receivers.byUrl.size > 0) {
        for (const receiver of receivers.byUrl.values()) receiver.mode = "ok"
        yield* timed("end")(advance(75 * 60_000, 60_000))
        stepNo += 1
        checkArrivals()
        const end = yield* now()
        const found = yield* onStore(
          Effect.provide(deliveryChecks(receivers, end, defaultPolicy.webhooks.retryForMs), store.context)
        ).pipe(Effect.orDie)
        for (const arrival of receivers.arrivals) {
          count(`webhook answers ${arrival.answered}`)
          if (arrival.slow) count("webhook answers slow")
        }
        if (found.length > 0 && failure === undefined) failure = { step: stepNo, violations: found }
      }
      counts["virtual minutes"] = Math.round(((yield* now()) - epoch) / 60_000)
      return {
        ok: failure === undefined,
        steps: stepNo,
        ops,
        trace: hash.digest("hex").slice(0, 16),
        failure,
        log,
        counts,
        spent
      } satisfies RunResult
    })
  ).pipe(
    Effect.provide(TestClock.layer()),
    // The instances' own logs (a crashed connection, a fenced call) are expected; --verbose shows them.
    Effect.provideService(References.MinimumLogLevel, options.verbose ? "Info" : "None")
  )
