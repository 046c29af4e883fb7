import type { Rng } from "./random.ts"

/**
 * One step of a run's schedule: plain data drawn from the seed before the run starts, so a
 * schedule can be replayed, cut short and thinned (shrinking) without drawing again. Clients and
 * instances are named by number; a step that makes no sense when it runs (a client with no key
 * yet, say) does what it can and says so in the log.
 */
export type Step =
  | { readonly kind: "mint"; readonly client: number; readonly instance: number }
  | {
      readonly kind: "call"
      readonly client: number
      readonly instance: number
      readonly surface: "rest" | "mcp"
      readonly op: number
      /** Send the client's previous call again, same Idempotency-Key (a client retry), here. */
      readonly retry: boolean
      /** Ask for the receipt signed (REST's `Prefer: receipt-signature`), checked against the JWKS. */
      readonly signed: boolean
    }
  /** The same call (same Idempotency-Key) sent to two instances at once. */
  | {
      readonly kind: "race"
      readonly client: number
      readonly instances: readonly [number, number]
      readonly op: number
    }
  /**
   * A call held in the upstream on `instance` while the account calls again on `other` (the one
   * call in flight) and the client retries the held call's key there; then `latencyMs` pass and it
   * is let go.
   */
  | {
      readonly kind: "held"
      readonly client: number
      readonly instance: number
      readonly other: number
      readonly latencyMs: number
    }
  /** A call frozen in the upstream past its lease: the sweeper refunds it, a retry elsewhere runs, then it wakes. */
  | { readonly kind: "freeze"; readonly client: number; readonly instance: number; readonly other: number }
  /** A call in flight when its instance crashes (fibers interrupted, memory lost, connection cut); the instance restarts. */
  | { readonly kind: "crash"; readonly client: number; readonly instance: number }
  /** The instance's connection drops at statement `at` of its next transaction, during a call of the client. */
  | { readonly kind: "dbdrop"; readonly client: number; readonly instance: number; readonly at: number }
  | {
      readonly kind: "fault"
      readonly latencyMs: number
      readonly errorRate: number
      readonly outage: boolean
      readonly paused: ReadonlyArray<"profnet" | "forum" | "microblog">
    }
  | { readonly kind: "tick"; readonly ms: number }
  /**
   * An x402 payment on the simulation's chain: `inline`, the retry of a data call refused
   * INSUFFICIENT_CREDITS with the same Idempotency-Key (an explicit purchase when the call was not
   * refused so), or `explicit` at POST /v1/credits/x402 for `credits`. `fault`: the payer has no
   * funds (`refused`), the facilitator is down, the settlement goes through but its answer is lost
   * (`lose`) or its instance crashes before crediting (`crash`); after a fault the client sends the
   * same payment again on `other`. `replay`: a paid payment is sent once more.
   */
  | {
      readonly kind: "x402"
      readonly client: number
      readonly instance: number
      readonly other: number
      readonly mode: "inline" | "explicit"
      readonly credits: number
      readonly fault: "none" | "refused" | "down" | "lose" | "crash"
      readonly replay: boolean
    }
  | { readonly kind: "signin"; readonly client: number; readonly instance: number }
  /** A checkout started on one instance and paid on both (paid twice). */
  | { readonly kind: "checkout"; readonly client: number; readonly instances: readonly [number, number] }
  /** A new key with a spend cap per UTC day, per month or in total, which the client uses from then on. */
  | {
      readonly kind: "cap"
      readonly client: number
      readonly instance: number
      readonly cap: number
      readonly period: "day" | "month" | "total"
    }
  | { readonly kind: "topup"; readonly client: number; readonly instance: number }
  | { readonly kind: "rotate"; readonly client: number; readonly instance: number }
  | { readonly kind: "revoke"; readonly client: number; readonly instance: number }
  /** A `production` subscription bought at a checkout (local rail), paid once. */
  | { readonly kind: "subscribe"; readonly client: number; readonly instance: number }
  /** The operator renews the client's subscription (one more period; it ends instead if set to cancel). */
  | { readonly kind: "renew"; readonly client: number; readonly instance: number }
  /**
   * The client sets its subscription to cancel at the period's end, at its billing portal; then the
   * period's end comes and the operator's renewal ends it instead.
   */
  | { readonly kind: "cancel"; readonly client: number; readonly instance: number }
  /** The operator rotates the receipt signing key on one instance (the others see it within a minute). */
  | { readonly kind: "receiptkey"; readonly instance: number }
  /**
   * The client's webhook receiver: `register` an endpoint for every event (a test ping when it has
   * one), its receiver starts to `fail` (500), turns `slow` (`latencyMs`, past the delivery's timeout
   * at times), or `recover`s; or the client `delete`s the endpoint.
   */
  | {
      readonly kind: "webhook"
      readonly client: number
      readonly instance: number
      readonly action: "register" | "fail" | "slow" | "recover" | "delete"
      readonly latencyMs: number
    }

  /**
   * A person connects an MCP app through the authorization server (oidc-provider): the app, one
   * client registered once a run and shared by every client, sends the browser to authorize with
   * PKCE; the person signs in by email and `allow`s or `deny`s. Allowed, the app exchanges the code
   * on `other`, tries the code once more, and calls a tool of `/mcp/profnet` with the access token;
   * with `revoke` the person then disconnects the app and the app tries its token again.
   */
  | {
      readonly kind: "oauth"
      readonly client: number
      readonly instance: number
      readonly other: number
      readonly decision: "allow" | "deny"
      readonly revoke: boolean
      readonly op: number
    }

export interface ScheduleOptions {
  readonly steps: number
  readonly instances: number
  readonly clients: number
  /** Fault kinds the schedule may draw: upstream, crash, freeze, dbdrop, retry. */
  readonly faults: ReadonlySet<string>
}

export const faultKinds = ["upstream", "crash", "freeze", "dbdrop", "retry"] as const

/** Draws a schedule of `steps` steps from `rng`. */
export const makeSchedule = (rng: Rng, options: ScheduleOptions): Array<Step> => {
  const steps: Array<Step> = []
  const client = () => rng.int(options.clients)
  const instance = () => rng.int(options.instances)
  const other = (not: number) =>
    options.instances === 1 ? not : (not + 1 + rng.int(options.instances - 1)) % options.instances
  const has = (fault: string) => options.faults.has(fault)
  // Every client first gets a key, so the run spends its steps on the money path.
  for (let c = 0; c < options.clients && steps.length < options.steps; c++) {
    steps.push({ kind: "mint", client: c, instance: instance() })
  }
  while (steps.length < options.steps) {
    const roll = rng.next()
    const c = client()
    const i = instance()
    if (roll < 0.47) {
      const surface = rng.next() < 0.3 ? "mcp" : "rest"
      steps.push({
        kind: "call",
        client: c,
        instance: i,
        surface,
        op: rng.int(8),
        retry: has("retry") && rng.next() < 0.25,
        signed: surface === "rest" && rng.next() < 0.25
      })
    } else if (roll < 0.5) {
      const faults: Array<"none" | "refused" | "down" | "lose" | "crash"> = ["none", "none", "refused"]
      if (has("upstream")) faults.push("down", "lose")
      if (has("crash")) faults.push("crash")
      steps.push({
        kind: "x402",
        client: c,
        instance: i,
        other: other(i),
        mode: rng.next() < 0.5 ? "inline" : "explicit",
        credits: 500 + 100 * rng.int(10),
        fault: rng.pick(faults),
        replay: rng.next() < 0.3
      })
    } else if (roll < 0.55 && has("retry") && options.instances > 1) {
      steps.push({ kind: "race", client: c, instances: [i, other(i)], op: rng.int(8) })
    } else if (roll < 0.6) {
      steps.push({ kind: "held", client: c, instance: i, other: other(i), latencyMs: 100 + rng.int(5_000) })
    } else if (roll < 0.63 && has("freeze")) {
      steps.push({ kind: "freeze", client: c, instance: i, other: other(i) })
    } else if (roll < 0.65 && has("crash")) {
      steps.push({ kind: "crash", client: c, instance: i })
    } else if (roll < 0.68 && has("dbdrop")) {
      steps.push({ kind: "dbdrop", client: c, instance: i, at: 1 + rng.int(4) })
    } else if (roll < 0.72 && has("upstream")) {
      const calm = rng.next() < 0.5
      steps.push({
        kind: "fault",
        latencyMs: calm ? 0 : rng.pick([0, 50, 500, 3_000]),
        errorRate: calm ? 0 : rng.pick([0, 0.1, 0.5]),
        outage: !calm && rng.next() < 0.15,
        paused: !calm && rng.next() < 0.2 ? [rng.pick(["profnet", "forum"] as const)] : []
      })
    } else if (roll < 0.78) {
      steps.push({ kind: "tick", ms: rng.pick([200, 1_000, 7_000, 20_000, 65_000, 600_000]) })
    } else if (roll < 0.83) {
      steps.push({ kind: "signin", client: c, instance: i })
    } else if (roll < 0.845) {
      steps.push({ kind: "checkout", client: c, instances: [i, other(i)] })
    } else if (roll < 0.855) {
      steps.push({ kind: "subscribe", client: c, instance: i })
    } else if (roll < 0.862) {
      steps.push({ kind: "renew", client: c, instance: i })
    } else if (roll < 0.87) {
      steps.push({ kind: "cancel", client: c, instance: i })
    } else if (roll < 0.9) {
      steps.push({
        kind: "cap",
        client: c,
        instance: i,
        cap: 5 + rng.int(60),
        period: rng.pick(["day", "month", "total"] as const)
      })
    } else if (roll < 0.93) {
      steps.push({ kind: "topup", client: c, instance: i })
    } else if (roll < 0.96) {
      steps.push({ kind: "rotate", client: c, instance: i })
    } else if (roll < 0.967) {
      steps.push({ kind: "revoke", client: c, instance: i })
    } else if (roll < 0.97) {
      steps.push({ kind: "receiptkey", instance: i })
    } else {
      steps.push({ kind: "mint", client: c, instance: i })
    }
  }
  return withOAuth(withWebhooks(steps, rng.fork("webhooks"), options), rng.fork("oauth"), options)
}

/**
 * The OAuth steps, from a stream of their own like the webhook steps (`withWebhooks`), put between
 * the others after the clients' first keys.
 */
const withOAuth = (base: ReadonlyArray<Step>, rng: Rng, options: ScheduleOptions): Array<Step> => {
  const steps: Array<Step> = []
  base.forEach((step, at) => {
    if (at >= options.clients && rng.next() < 0.025) {
      const i = rng.int(options.instances)
      steps.push({
        kind: "oauth",
        client: rng.int(options.clients),
        instance: i,
        other: options.instances === 1 ? i : (i + 1 + rng.int(options.instances - 1)) % options.instances,
        decision: rng.next() < 0.8 ? "allow" : "deny",
        revoke: rng.next() < 0.35,
        op: rng.int(3)
      })
    }
    steps.push(step)
  })
  return steps
}

/**
 * The webhook steps, drawn from a stream of their own and put between the others (after the
 * clients' first keys), so the rest of a seed's schedule stays as it was.
 */
const withWebhooks = (base: ReadonlyArray<Step>, rng: Rng, options: ScheduleOptions): Array<Step> => {
  const steps: Array<Step> = []
  base.forEach((step, at) => {
    if (at >= options.clients && rng.next() < 0.06) {
      const roll = rng.next()
      steps.push({
        kind: "webhook",
        client: rng.int(options.clients),
        instance: rng.int(options.instances),
        action:
          roll < 0.35
            ? "register"
            : roll < 0.55
              ? "fail"
              : roll < 0.7
                ? "slow"
                : roll < 0.9
                  ? "recover"
                  : "delete",
        latencyMs: rng.pick([300, 4_000, 15_000])
      })
    }
    steps.push(step)
  })
  return steps
}

/** A step in one line, for the log and a failure's report. */
export const showStep = (step: Step): string => {
  const { kind, ...rest } = step
  return `${kind} ${Object.entries(rest)
    .map(([name, value]) => `${name}=${Array.isArray(value) ? value.join(",") : String(value)}`)
    .join(" ")}`
}
