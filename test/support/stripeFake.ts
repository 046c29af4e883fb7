import { createServer, type IncomingMessage, type Server } from "node:http"
import Stripe from "stripe"

/** One request the fake received: its path, form fields (bracketed names kept flat) and idempotency key. */
export interface FakeRequest {
  readonly method: string
  readonly path: string
  readonly form: Record<string, string>
  readonly idempotencyKey: string | undefined
  readonly authorization: string | undefined
}

export interface StripeFake {
  readonly url: string
  readonly requests: Array<FakeRequest>
  /** The objects created, by id (customers, checkout sessions, portal sessions). */
  readonly objects: Map<string, Record<string, unknown>>
  /** When set, every API call answers 500 with Stripe's error shape. */
  failing: boolean
  /** The paths that answer 500 (Stripe unreachable for those calls only). */
  readonly failingPaths: Set<string>
  /**
   * What paying a checkout that set up future usage leaves on Stripe: a card saved on the customer,
   * which off-session PaymentIntents may charge. A card that `declines` answers each charge with
   * Stripe's `card_declined` card error (HTTP 402). The card's id.
   */
  readonly savePaymentMethod: (customer: string, options?: { readonly declines?: boolean }) => string
  readonly close: () => Promise<void>
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const metadataOf = (form: Record<string, string>, prefix = "metadata") => {
  const metadata: Record<string, string> = {}
  for (const [name, value] of Object.entries(form)) {
    const match = new RegExp(`^${prefix.replace(/[[\]]/g, "\\$&")}\\[([^\\]]+)\\]$`).exec(name)
    if (match !== null) metadata[match[1]!] = value
  }
  return metadata
}

/**
 * A small stand-in for the parts of Stripe's API the rail calls: customers, Checkout Sessions and
 * billing-portal sessions. Form-encoded requests as the SDK sends them; a repeated
 * `Idempotency-Key` gets the first answer again, as on Stripe.
 */
export const startStripeFake = async (): Promise<StripeFake> => {
  const requests: Array<FakeRequest> = []
  const objects = new Map<string, Record<string, unknown>>()
  const answered = new Map<string, { status: number; body: unknown }>()
  const counters = new Map<string, number>()
  const nextId = (prefix: string) => {
    const n = (counters.get(prefix) ?? 0) + 1
    counters.set(prefix, n)
    return `${prefix}_fake${String(n).padStart(6, "0")}`
  }
  let url = ""
  /** Saved cards by customer, newest first; and the cards that decline. */
  const savedCards = new Map<string, Array<string>>()
  const declining = new Set<string>()
  const fake: StripeFake = {
    get url() {
      return url
    },
    requests,
    objects,
    failing: false,
    failingPaths: new Set(),
    savePaymentMethod: (customer, options = {}) => {
      const id = nextId("pm")
      objects.set(id, {
        id,
        object: "payment_method",
        type: "card",
        customer,
        card: { brand: "visa", last4: "4242" }
      })
      savedCards.set(customer, [id, ...(savedCards.get(customer) ?? [])])
      if (options.declines === true) declining.add(id)
      return id
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }

  const handle = (request: FakeRequest): { status: number; body: unknown } => {
    if (fake.failing || fake.failingPaths.has(request.path))
      return {
        status: 500,
        body: { error: { type: "api_error", message: "The fake is failing on purpose." } }
      }
    const { form } = request
    const store = (object: Record<string, unknown>) => {
      objects.set(object.id as string, object)
      return { status: 200, body: object }
    }
    if (request.method === "POST" && request.path === "/v1/customers")
      return store({ id: nextId("cus"), object: "customer", metadata: metadataOf(form) })
    if (request.method === "POST" && request.path === "/v1/checkout/sessions") {
      const id = nextId("cs_test")
      return store({
        id,
        object: "checkout.session",
        mode: form.mode,
        url: `${url}/c/pay/${id}`,
        client_reference_id: form.client_reference_id ?? null,
        customer: form.customer ?? null,
        customer_creation: form.customer_creation ?? null,
        success_url: form.success_url,
        cancel_url: form.cancel_url,
        metadata: metadataOf(form),
        subscription_metadata: metadataOf(form, "subscription_data[metadata]"),
        line_items: {
          price: form["line_items[0][price]"] ?? null,
          unit_amount: form["line_items[0][price_data][unit_amount]"] ?? null,
          recurring: form["line_items[0][price_data][recurring][interval]"] ?? null
        },
        status: "open",
        payment_status: "unpaid"
      })
    }
    const listed = /^\/v1\/customers\/([^/]+)\/payment_methods$/.exec(request.path)
    if (request.method === "GET" && listed !== null) {
      const data = (savedCards.get(listed[1]!) ?? []).map((id) => objects.get(id))
      return { status: 200, body: { object: "list", url: request.path, has_more: false, data } }
    }
    if (request.method === "POST" && request.path === "/v1/payment_intents") {
      const id = nextId("pi")
      const method = form.payment_method ?? ""
      const intent = {
        id,
        object: "payment_intent",
        amount: Number(form.amount),
        currency: form.currency,
        customer: form.customer,
        payment_method: method,
        off_session: form.off_session === "true",
        confirm: form.confirm === "true",
        description: form.description ?? null,
        metadata: metadataOf(form),
        status: declining.has(method) ? "requires_payment_method" : "succeeded",
        last_payment_error: declining.has(method)
          ? { type: "card_error", code: "card_declined", message: "Your card was declined." }
          : null
      }
      objects.set(id, intent)
      if (declining.has(method))
        return {
          status: 402,
          body: {
            error: {
              type: "card_error",
              code: "card_declined",
              decline_code: "generic_decline",
              message: "Your card was declined.",
              payment_intent: intent
            }
          }
        }
      return { status: 200, body: intent }
    }
    if (request.method === "POST" && request.path === "/v1/billing_portal/sessions") {
      const id = nextId("bps")
      return store({
        id,
        object: "billing_portal.session",
        customer: form.customer,
        return_url: form.return_url,
        url: `${url}/p/session/${id}`
      })
    }
    return {
      status: 404,
      body: {
        error: { type: "invalid_request_error", message: `Unrecognized request URL (${request.path}).` }
      }
    }
  }

  const server: Server = createServer(async (incoming, outgoing) => {
    const body = await readBody(incoming)
    const path = (incoming.url ?? "/").split("?")[0]!
    const form: Record<string, string> = {}
    for (const [name, value] of new URLSearchParams(body)) form[name] = value
    const header = (name: string) => {
      const value = incoming.headers[name]
      return Array.isArray(value) ? value[0] : value
    }
    const request: FakeRequest = {
      method: incoming.method ?? "GET",
      path,
      form,
      idempotencyKey: header("idempotency-key"),
      authorization: header("authorization")
    }
    requests.push(request)
    const key = request.idempotencyKey === undefined ? undefined : `${request.path} ${request.idempotencyKey}`
    const answer = (key === undefined ? undefined : answered.get(key)) ?? handle(request)
    if (key !== undefined && answer.status < 500) answered.set(key, answer)
    outgoing.writeHead(answer.status, {
      "content-type": "application/json",
      "request-id": `req_${requests.length}`
    })
    outgoing.end(JSON.stringify(answer.body))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const address = server.address()
  url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  return fake
}

const signer = new Stripe("sk_test_signer", { telemetry: false })
let eventCounter = 0

/** A Stripe event around `object`, as Stripe posts it to a webhook endpoint. */
export const stripeEvent = (type: string, object: Record<string, unknown>, id?: string) => {
  eventCounter += 1
  return {
    id: id ?? `evt_fake${String(eventCounter).padStart(6, "0")}`,
    object: "event",
    api_version: "2026-10-28.endive",
    created: Math.floor(Date.now() / 1000),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object }
  }
}

/** The body and `Stripe-Signature` header of a webhook delivery, signed with `secret`. */
export const signedDelivery = (
  event: unknown,
  secret: string,
  options: { readonly timestamp?: number } = {}
) => {
  const payload = JSON.stringify(event, null, 2)
  const signature = signer.webhooks.generateTestHeaderString({
    payload,
    secret,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
  })
  return { payload, signature }
}
