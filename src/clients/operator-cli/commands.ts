import { Console, Data, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { type Platform, plans, platforms } from "../../domain/plans.ts"
import { AdminClient } from "./AdminClient.ts"

/** A flag combination the parser accepts but the verb does not (exit 2, like a parse error). */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

const printed = <A, E, R>(
  call: (client: AdminClient["Service"]) => Effect.Effect<A, E, R>,
  shown: (result: A) => unknown = (result) => result
) =>
  Effect.gen(function* () {
    const result = yield* call(yield* AdminClient)
    yield* Console.log(JSON.stringify(shown(result), null, 2))
  }).pipe(Effect.provide(AdminClient.layer))

/** Epoch-millisecond `*_at` fields as ISO 8601 times, as every other command prints them. */
const isoTimes = (rows: ReadonlyArray<Record<string, unknown>>) =>
  rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([name, value]) => [
        name,
        name.endsWith("_at") && typeof value === "number" ? new Date(value).toISOString() : value
      ])
    )
  )

/** `--open|--close`, `--pause|--resume`: exactly one of the two. */
const oneOf = (name: string, yes: Option.Option<boolean>, no: Option.Option<boolean>) => {
  const a = Option.getOrElse(yes, () => false)
  const b = Option.getOrElse(no, () => false)
  return a === b
    ? Effect.fail(new UsageError({ message: `Give exactly one of ${name}.` }))
    : Effect.succeed(a)
}

const switchFlag = (name: string) => Flag.Boolean(name).pipe(Flag.withoutNegation, Flag.optional)

const parsePlatforms = (text: string) => {
  const names = text.split(",").map((name) => name.trim())
  return names.length > 0 &&
    names.every((name): name is Platform => (platforms as ReadonlyArray<string>).includes(name))
    ? Option.some(names as [Platform, ...Array<Platform>])
    : Option.none()
}

/** A ceiling of N credits, or `none` to lift it. */
const parseCeiling = (text: string): Option.Option<number | null> =>
  text === "none" ? Option.some(null) : /^\d+$/.test(text) ? Option.some(Number(text)) : Option.none()

const account = Flag.String("account").pipe(Flag.withDescription("The account id (acct_...)."))
const byAccount = { account }

const accountCommand = Command.make("account", byAccount, ({ account }) =>
  printed((client) => client.account({ accountId: account }))
).pipe(
  Command.withDescription("Show an account: plan, credits, keys, today's free-tier use, calls in flight.")
)

const credit = Command.make(
  "credit",
  {
    account,
    credits: Flag.Int("credits").pipe(
      Flag.filter(
        (n) => n > 0,
        (n) => `--credits must be a positive integer, got ${n}`
      )
    ),
    kind: Flag.Literals("kind", ["balance", "grant"]).pipe(Flag.withDefault("balance" as const))
  },
  ({ account, credits, kind }) =>
    printed((client) => client.credit({ accountId: account, credits, kind, reason: "admin cli" }))
).pipe(Command.withDescription("Add credits to an account's balance (paid) or grant (free) pool."))

const plan = Command.make("plan", { account, plan: Flag.Literals("plan", plans) }, ({ account, plan }) =>
  printed((client) => client.plan({ accountId: account, plan }))
).pipe(Command.withDescription("Set an account's plan."))

const entitle = Command.make(
  "entitle",
  {
    account,
    platforms: Flag.String("platforms").pipe(
      Flag.filterMap(
        parsePlatforms,
        (text) => `--platforms must list some of ${platforms.join(",")}, got ${text}`
      )
    )
  },
  ({ account, platforms }) => printed((client) => client.entitle({ accountId: account, platforms }))
).pipe(Command.withDescription("Set the platforms an account may call (comma-separated)."))

const suspend = Command.make("suspend", byAccount, ({ account }) =>
  printed((client) => client.suspend({ accountId: account }))
).pipe(Command.withDescription("Suspend an account: its keys answer UNAUTHORIZED."))

const unsuspend = Command.make("unsuspend", byAccount, ({ account }) =>
  printed((client) => client.unsuspend({ accountId: account }))
).pipe(Command.withDescription("Reactivate a suspended account."))

const freeTier = Command.make(
  "free-tier",
  {
    open: switchFlag("open"),
    close: switchFlag("close"),
    globalDailyCredits: Flag.String("global-daily-credits").pipe(
      Flag.filterMap(
        parseCeiling,
        (text) => `--global-daily-credits must be 0 or more, or none, got ${text}`
      ),
      Flag.withDescription("Free-tier credits per UTC day across all IPs, or none for no ceiling."),
      Flag.optional
    )
  },
  ({ open, close, globalDailyCredits }) =>
    Effect.flatMap(oneOf("--open or --close", open, close), (isOpen) =>
      printed((client) =>
        client.freeTier({
          open: isOpen,
          ...Option.match(globalDailyCredits, {
            onNone: () => ({}),
            onSome: (n) => ({ globalDailyCredits: n })
          })
        })
      )
    )
).pipe(Command.withDescription("Open or close the free tier, optionally with a global daily credit ceiling."))

const live = Command.make(
  "live",
  { pause: switchFlag("pause"), resume: switchFlag("resume") },
  ({ pause, resume }) =>
    Effect.flatMap(oneOf("--pause or --resume", pause, resume), (paused) =>
      printed((client) => client.live({ paused }))
    )
).pipe(Command.withDescription("Pause or resume live upstream fetching (cached data is still served)."))

const upstream = Command.make(
  "upstream",
  {
    latencyMin: Flag.Int("latency-min-ms").pipe(Flag.optional),
    latencyMax: Flag.Int("latency-max-ms").pipe(Flag.optional),
    errorRate: Flag.Finite("error-rate").pipe(Flag.optional),
    outage: Flag.Literals("outage", ["on", "off"]).pipe(Flag.optional),
    paused: Flag.String("paused").pipe(
      Flag.withDescription("Comma-separated platforms whose live fetching fails as paused, or none."),
      Flag.optional
    )
  },
  ({ latencyMin, latencyMax, errorRate, outage, paused }) =>
    Effect.gen(function* () {
      const pausedList = Option.map(
        paused,
        (text): Option.Option<ReadonlyArray<Platform>> =>
          text === "none" ? Option.some([]) : parsePlatforms(text)
      )
      if (Option.isSome(pausedList) && Option.isNone(pausedList.value)) {
        return yield* new UsageError({
          message: `--paused must list some of ${platforms.join(",")}, or none.`
        })
      }
      const min = Option.getOrUndefined(latencyMin)
      const max = Option.getOrUndefined(latencyMax)
      yield* printed((client) =>
        client.upstream({
          ...(min === undefined && max === undefined
            ? {}
            : { latencyMs: { min: min ?? 0, max: max ?? min ?? 0 } }),
          ...Option.match(errorRate, { onNone: () => ({}), onSome: (rate) => ({ errorRate: rate }) }),
          ...Option.match(outage, { onNone: () => ({}), onSome: (value) => ({ outage: value === "on" }) }),
          ...(Option.isSome(pausedList) && Option.isSome(pausedList.value)
            ? { paused: pausedList.value.value }
            : {})
        })
      )
    })
).pipe(
  Command.withDescription(
    "Set the simulated world's fault knobs: latency, error rate, outage, paused platforms."
  )
)

const outbox = Command.make(
  "outbox",
  {
    email: Flag.String("email").pipe(
      Flag.withDescription("Only the messages to this address."),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(
      Flag.filter(
        (n) => n >= 1 && n <= 1000,
        (n) => `--limit must be between 1 and 1000, got ${n}`
      ),
      Flag.withDescription("How many messages, newest first (1 to 1000)."),
      Flag.withDefault(20)
    )
  },
  ({ email, limit }) =>
    printed(
      (client) =>
        client.outbox({
          limit,
          ...Option.match(email, { onNone: () => ({}), onSome: (address) => ({ email: address }) })
        }),
      isoTimes
    )
).pipe(
  Command.withDescription(
    "List outbox mail, newest first, with delivery state (times in ISO 8601); the text body is shown until it is delivered."
  )
)

const purchases = Command.make("purchases", byAccount, ({ account }) =>
  printed((client) => client.purchases({ accountId: account }))
).pipe(
  Command.withDescription(
    "List an account's purchases, newest first, and its subscription (times in epoch milliseconds)."
  )
)

const renew = Command.make("renew", byAccount, ({ account }) =>
  printed((client) => client.renew({ accountId: account }))
).pipe(
  Command.withDescription(
    "Renew the account's local production subscription one period (adds its credits); one set to cancel at period end is canceled instead."
  )
)

const apps = Command.make("apps", byAccount, ({ account }) =>
  printed((client) => client.apps({ accountId: account }))
).pipe(Command.withDescription("List an account's connected apps (OAuth clients), as GET /v1/apps does."))

const rotateKey = Command.make("rotate-key", {}, () => printed((client) => client.rotateReceiptKey())).pipe(
  Command.withDescription(
    "Make a new receipt signing key; receipts are signed with it from now on, and the old public keys stay at /.well-known/jwks.json."
  )
)

const receipts = Command.make("receipts").pipe(
  Command.withDescription("Receipt signing keys."),
  Command.withSubcommands([rotateKey])
)

const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands, sent to SVC_BASE_URL with SVC_ADMIN_TOKEN."),
  Command.withSubcommands([
    accountCommand,
    credit,
    plan,
    entitle,
    suspend,
    unsuspend,
    freeTier,
    live,
    upstream,
    outbox,
    purchases,
    renew,
    apps,
    receipts
  ])
)

export const cli = Command.make("svc").pipe(Command.withSubcommands([admin]))
