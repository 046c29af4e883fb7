import { Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Governor } from "../domain/accounts.ts"
import { capPeriods } from "../domain/keyLimits.ts"
import { plans, platforms } from "../domain/plans.ts"
import { type ClientIp, PlainInput, SpendKeyAuth } from "./middleware.ts"
import { errorsOf } from "./problemSchemas.ts"

/**
 * The identity and governance routes (the account side of the contract): email
 * sign-in, command-line sign-in, recovery, management tokens, keys and the balance alert.
 */

/** The identity behind a management token, for the routes of the management surface. */
export class Governing extends Context.Service<Governing, Governor>()("contract/Governing") {}

const managementToken = HttpApiSecurity.http({ scheme: "bearer" }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "A management token (`svcm_...`) from a sign-in: POST /v1/auth/email/start, then /v1/auth/email/verify."
  )
)

export class ManagementAuth extends HttpApiMiddleware.Service<
  ManagementAuth,
  { provides: Governing; requires: ClientIp }
>()("contract/ManagementAuth", { security: { management: managementToken } }) {}

const described = <E extends { readonly annotateMerge: (annotations: Context.Context<never>) => E }>(
  summary: string,
  description: string,
  endpoint: E
): E => endpoint.annotateMerge(OpenApi.annotations({ summary, description }))

const Email = Schema.String.check(Schema.isMaxLength(254)).annotate({
  description: "An email address.",
  examples: ["agent-owner@example.com"]
})
const Label = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({
  description: "A name for the key (1 to 64 characters).",
  examples: ["ci-runner"]
})
const AccountId = Schema.String.annotate({
  description:
    "The account to act on, when the signed-in email governs several (AUTH_REQUIRED lists them). Query or body.",
  examples: ["acct_7Yq2mW9xK3pL5nR8tV1c"]
})
const KeyId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({
  description: "A key id from GET /v1/keys (key_...).",
  examples: ["key_3nF8qL2wX9mK4pR7tV1z"]
})
const Timestamp = Schema.String.annotate({
  description: "RFC 3339 time, UTC.",
  examples: ["2026-11-23T15:00:00.000Z"]
})

const AccountQuery = Schema.Struct({ account_id: Schema.optionalKey(AccountId) })

const SpendCap = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
).annotate({
  description:
    "The most credits the key may spend in its `cap_period`, whatever funds them (free budget, grant, balance); its child keys' spend counts too.",
  examples: [500]
})
const CapPeriod = Schema.Literals(capPeriods).annotate({
  description: "`day` (UTC day), `month` (UTC calendar month) or `total` (the default).",
  examples: ["day"]
})
const MayDelegate = Schema.Boolean.annotate({
  description:
    "The owner's grant: this key may make, list, change and revoke child keys for sub-agents (POST /v1/keys/child and the child tools on /mcp). Default false: a key does data calls only. A child key never delegates.",
  examples: [true]
})
const PlatformList = Schema.Array(Schema.Literals(platforms))
  .check(Schema.isMinLength(1))
  .annotate({
    description: "The platforms the key may call (a non-empty subset of the account's).",
    examples: [["forum"]]
  })

/** A key's limits as a request sets them: absent leaves a field as it is (the default when new), `null` clears it. */
const KeyLimitsInput = {
  spend_cap_credits: Schema.optionalKey(Schema.NullOr(SpendCap)),
  cap_period: Schema.optionalKey(CapPeriod),
  platforms: Schema.optionalKey(Schema.NullOr(PlatformList))
}

/** A key's limits (and delegation) as an answer shows them. */
const KeyLimitsOutput = {
  spend_cap_credits: Schema.NullOr(Schema.Int),
  cap_period: Schema.Literals(capPeriods),
  platforms: Schema.NullOr(Schema.Array(Schema.Literals(platforms))),
  may_delegate: Schema.Boolean.annotate({
    description: "Whether this key may make child keys (its owner's grant); always false for a child."
  })
}

export const AccountSummary = Schema.Struct({
  account_id: Schema.String,
  plan: Schema.Literals(plans),
  claimed_at: Schema.NullOr(Timestamp),
  balance_credits: Schema.Int,
  grant_credits: Schema.Int
}).annotate({ identifier: "AccountSummary" })

export const SignedIn = Schema.Struct({
  management_token: Schema.String.annotate({ description: "`svcm_...`, shown once; 90 days." }),
  token_id: Schema.String,
  expires_at: Timestamp,
  email: Schema.String,
  accounts: Schema.Array(AccountSummary),
  claimed: Schema.NullOr(Schema.String).annotate({
    description: "The account this sign-in claimed (its start carried that account's spend key), else null."
  }),
  grant_credits: Schema.Int.annotate({
    description: "Credits granted by this sign-in: 10000 once per email and key, else 0."
  })
}).annotate({ identifier: "SignedIn" })

const SignInStarted = Schema.Struct({ sent: Schema.Literal(true), expires_in: Schema.Int }).annotate({
  identifier: "SignInStarted",
  httpApiStatus: 202
})

const SignInStart = Schema.Struct({ email: Email })

const SignInProof = Schema.Struct({
  email: Schema.optionalKey(Email),
  code: Schema.optionalKey(
    Schema.String.check(Schema.isMaxLength(16)).annotate({
      description: "The 6-digit code from the email.",
      examples: ["048213"]
    })
  ),
  token: Schema.optionalKey(
    Schema.String.check(Schema.isMaxLength(128)).annotate({
      description: "The token of the emailed sign-in link."
    })
  )
}).annotate({ description: "Either `email` and `code`, or the link's `token`." })

export const DeviceAuthorization = Schema.Struct({
  device_code: Schema.String,
  user_code: Schema.String,
  verification_uri: Schema.String,
  verification_uri_complete: Schema.String,
  expires_in: Schema.Int,
  interval: Schema.Int
}).annotate({ identifier: "DeviceAuthorization" })

/** RFC 8628 section 3.5: the token request's answer until the code is approved. */
export const DevicePending = Schema.Struct({
  error: Schema.Literals([
    "authorization_pending",
    "slow_down",
    "access_denied",
    "expired_token",
    "invalid_grant"
  ]),
  error_description: Schema.String,
  interval: Schema.optionalKey(Schema.Int)
}).annotate({ identifier: "DeviceTokenError", httpApiStatus: 400 })

const Rekeyed = Schema.Struct({
  account_id: Schema.String,
  key_id: Schema.String,
  key: Schema.String.annotate({ description: "The new spend key, shown once." }),
  label: Schema.NullOr(Schema.String),
  hint: Schema.String,
  created_at: Timestamp,
  revoked: Schema.Int.annotate({ description: "How many other keys were revoked." })
}).annotate({ identifier: "Rekeyed" })

const TokenListing = Schema.Struct({
  token_id: Schema.String,
  label: Schema.Literals(["web", "cli", "device"]),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  expires_at: Timestamp,
  current: Schema.Boolean.annotate({ description: "The token this request was made with." })
})

const TokenRevoked = Schema.Struct({ token_id: Schema.String, revoked_at: Timestamp })

const KeyListing = Schema.Struct({
  key_id: Schema.String,
  label: Schema.NullOr(Schema.String),
  hint: Schema.String,
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
  parent_key_id: Schema.NullOr(Schema.String).annotate({
    description: "The key that made this child key; null for the account's own keys."
  }),
  ...KeyLimitsOutput,
  spent_in_period: Schema.NullOr(Schema.Int).annotate({
    description:
      "What a capped key has spent in its period (its children's spend included); null without a cap."
  }),
  cap_resets_at: Schema.NullOr(Timestamp).annotate({ description: "When a day or month cap starts afresh." })
}).annotate({ identifier: "KeyListing" })

const IssuedKeyFields = {
  key_id: Schema.String,
  key: Schema.String.annotate({ description: "The spend key, shown once." }),
  label: Schema.NullOr(Schema.String),
  hint: Schema.String,
  created_at: Timestamp,
  ...KeyLimitsOutput
}

const publicCodes = ["INVALID_INPUT", "PAYLOAD_TOO_LARGE", "INTERNAL"] as const
const governedCodes = [
  "INVALID_INPUT",
  "AUTH_REQUIRED",
  "UNAUTHORIZED",
  "PAYLOAD_TOO_LARGE",
  "INTERNAL"
] as const

export const AuthGroup = HttpApiGroup.make("auth", { topLevel: true })
  .annotate(
    OpenApi.Description,
    "Sign in by emailed code, from a browser or a command line; recover a lost key."
  )
  .add(
    described(
      "Start an email sign-in",
      "Emails a 6-digit code and a single-use link (10 minutes). Sent with an unclaimed account's spend key as bearer, the sign-in claims that account when it is verified with the same key. Always 202, whether or not the email is known. A new start replaces only this client's earlier code. By default 5 per IP per 15 minutes, 3 per email and IP per hour, 3 per email per 10 minutes.",
      HttpApiEndpoint.post("startEmailSignIn", "/auth/email/start", {
        payload: SignInStart,
        success: SignInStarted,
        error: errorsOf("RATE_LIMITED", "UNAUTHORIZED", ...publicCodes)
      })
    ),
    described(
      "Finish an email sign-in",
      "Trades the emailed code (with the email) or the link's token for a management token. Send the spend key the sign-in was started with as bearer to claim its account; without it the sign-in claims nothing. A wrong, used or expired code is UNAUTHORIZED. By default a code takes 5 wrong tries from one IP and 10 from IPs other than the one that started it (that one keeps its own 5); one IP may send 20 wrong codes per 15 minutes (RATE_LIMITED). The link counts no tries.",
      HttpApiEndpoint.post("verifyEmailSignIn", "/auth/email/verify", {
        payload: SignInProof,
        success: SignedIn,
        error: errorsOf("RATE_LIMITED", "UNAUTHORIZED", ...publicCodes)
      })
    ),
    described(
      "Start a device sign-in",
      "RFC 8628 device authorization: show `user_code` and `verification_uri` to the person, then poll /v1/auth/device/token every `interval` seconds.",
      HttpApiEndpoint.post("startDeviceSignIn", "/auth/device", {
        success: DeviceAuthorization,
        error: errorsOf("RATE_LIMITED", ...publicCodes)
      })
    ),
    described(
      "Poll a device sign-in",
      "400 with an RFC 8628 `error` (authorization_pending, slow_down, access_denied, expired_token) until the code is approved at verification_uri, then the management token.",
      HttpApiEndpoint.post("pollDeviceSignIn", "/auth/device/token", {
        payload: Schema.Struct({ device_code: Schema.String.check(Schema.isMaxLength(128)) }),
        success: SignedIn,
        error: [DevicePending, ...errorsOf(...publicCodes)]
      })
    ),
    described(
      "Exchange a browser callback code",
      "The single-use `code` that /login's loopback redirect (RFC 8252) delivered, for a management token.",
      HttpApiEndpoint.post("exchangeCode", "/auth/exchange", {
        payload: Schema.Struct({ code: Schema.String.check(Schema.isMaxLength(128)) }),
        success: SignedIn,
        error: errorsOf("UNAUTHORIZED", ...publicCodes)
      })
    ),
    described(
      "Ask for a recovery link",
      "Always 202, with the same work done for every address. A claimed account's email gets one message with a single-use link to /recover (1 hour) per account; an address without one gets a message saying so. By default 5 per IP per 15 minutes, 3 per email and IP per hour, 3 per email per 10 minutes.",
      HttpApiEndpoint.post("recover", "/recover", {
        payload: SignInStart,
        success: Schema.Struct({ sent: Schema.Literal(true) }).annotate({
          identifier: "RecoverySent",
          httpApiStatus: 202
        }),
        error: errorsOf("RATE_LIMITED", ...publicCodes)
      })
    ),
    described(
      "Re-key a recovered account",
      "The recovery link's token: a new key; every other key of the account is revoked; balance, plan and receipts stay.",
      HttpApiEndpoint.post("rekey", "/rekey", {
        payload: Schema.Struct({ token: Schema.String.check(Schema.isMaxLength(128)) }),
        success: Rekeyed,
        error: errorsOf("UNAUTHORIZED", ...publicCodes)
      })
    )
  )
  .middleware(PlainInput)

export const SessionsGroup = HttpApiGroup.make("sessions", { topLevel: true })
  .annotate(OpenApi.Description, "Management tokens of the signed-in email.")
  .add(
    described(
      "List management tokens",
      "The signed-in email's active management tokens (never their secrets).",
      HttpApiEndpoint.get("listTokens", "/auth/tokens", {
        success: Schema.Struct({ email: Schema.String, tokens: Schema.Array(TokenListing) }),
        error: errorsOf(...governedCodes)
      })
    ),
    described(
      "Revoke a management token",
      "Stops one of the email's management tokens at once.",
      HttpApiEndpoint.post("revokeToken", "/auth/tokens/revoke", {
        payload: Schema.Struct({ token_id: Schema.String.check(Schema.isMaxLength(64)) }),
        success: TokenRevoked,
        error: errorsOf("NOT_FOUND", ...governedCodes)
      })
    ),
    described(
      "Sign out",
      "Revokes the management token this request carries.",
      HttpApiEndpoint.post("logout", "/auth/logout", {
        success: TokenRevoked,
        error: errorsOf(...governedCodes)
      })
    )
  )
  .middleware(PlainInput)
  .middleware(ManagementAuth)

export const ManagementGroup = HttpApiGroup.make("management", { topLevel: true })
  .annotate(OpenApi.Description, "An account's spend keys and balance alert. Management token only.")
  .add(
    described(
      "List keys",
      "The account's keys (revoked ones for 30 days), never their secrets.",
      HttpApiEndpoint.get("listKeys", "/keys", {
        query: AccountQuery,
        success: Schema.Struct({ account_id: Schema.String, keys: Schema.Array(KeyListing) }),
        error: errorsOf(...governedCodes)
      })
    ),
    described(
      "Create a key",
      "A new spend key, shown once, with its limits: a spend cap per day, month or in total (a call above what is left is INSUFFICIENT_CREDITS with limit key_cap) and the platforms it may call; `may_delegate` lets it make child keys. A spend key does not expire: revoke it to end it. A trial account's first key earns the one-time 10,000-credit grant. An account may have a limited number of active keys (100 by default): past it, INVALID_INPUT until one is revoked.",
      HttpApiEndpoint.post("createKey", "/keys", {
        query: AccountQuery,
        payload: Schema.Struct({
          label: Schema.optionalKey(Label),
          ...KeyLimitsInput,
          may_delegate: Schema.optionalKey(MayDelegate),
          account_id: Schema.optionalKey(AccountId)
        }),
        success: Schema.Struct({ ...IssuedKeyFields, grant_credits: Schema.Int }).annotate({
          identifier: "CreatedKey",
          httpApiStatus: 201
        }),
        error: errorsOf(...governedCodes)
      })
    ),
    described(
      "Change a key's limits",
      "Sets a key's spend cap, period or platforms and `may_delegate`: an absent field stays as it is, `null` clears it. The cap counts what the key (and its child keys) already spent in the period. A child key follows its parent's platforms and cap at every call.",
      HttpApiEndpoint.post("updateKey", "/keys/update", {
        query: AccountQuery,
        payload: Schema.Struct({
          key_id: KeyId,
          ...KeyLimitsInput,
          may_delegate: Schema.optionalKey(MayDelegate),
          account_id: Schema.optionalKey(AccountId)
        }),
        success: KeyListing,
        error: errorsOf("NOT_FOUND", ...governedCodes)
      })
    ),
    described(
      "Rotate a key",
      "A new secret for the key's label and limits; the old secret stops working at once, and so do the child keys it made.",
      HttpApiEndpoint.post("rotateKey", "/keys/rotate", {
        query: AccountQuery,
        payload: Schema.Struct({ key_id: KeyId, account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({ ...IssuedKeyFields, replaces: Schema.String }).annotate({
          identifier: "RotatedKey"
        }),
        error: errorsOf("NOT_FOUND", ...governedCodes)
      })
    ),
    described(
      "Revoke a key",
      "The key stops working at once, and so do the child keys it made. Revoking the last key is allowed; the account stays, recoverable by email.",
      HttpApiEndpoint.post("revokeKey", "/keys/revoke", {
        query: AccountQuery,
        payload: Schema.Struct({ key_id: KeyId, account_id: Schema.optionalKey(AccountId) }),
        success: Schema.Struct({ key_id: Schema.String, revoked_at: Timestamp }),
        error: errorsOf("NOT_FOUND", ...governedCodes)
      })
    ),
    described(
      "Open the billing portal",
      "A link to the account's billing portal: Stripe's for a Stripe customer, else the service's own /portal page (purchases, plan and period, cancel the subscription at period end). The link works for an hour.",
      HttpApiEndpoint.post("billingPortal", "/portal", {
        query: AccountQuery,
        success: Schema.Struct({ account_id: Schema.String, url: Schema.String }),
        error: errorsOf("UPSTREAM_UNAVAILABLE", ...governedCodes)
      })
    ),
    described(
      "Set the balance alert",
      "One email each time the spendable credits (grant plus balance) cross below `threshold`; 0 turns it off.",
      HttpApiEndpoint.post("setBalanceAlert", "/alert", {
        query: AccountQuery,
        payload: Schema.Struct({
          threshold: Schema.Int.check(
            Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
          ).annotate({
            description: "Credits (integer, 0 or more; 0 turns the alert off).",
            examples: [500]
          }),
          account_id: Schema.optionalKey(AccountId)
        }),
        success: Schema.Struct({
          account_id: Schema.String,
          threshold: Schema.Int,
          balance_credits: Schema.Int,
          grant_credits: Schema.Int
        }),
        error: errorsOf(...governedCodes)
      })
    )
  )
  .middleware(PlainInput)
  .middleware(ManagementAuth)

/** Child keys: an agent hands a sub-agent a key bounded by its own, with its own spend key as bearer. */
export const ChildKeysGroup = HttpApiGroup.make("childKeys", { topLevel: true })
  .annotate(
    OpenApi.Description,
    "Child keys for sub-agents, made, changed and revoked with a spend key its owner lets delegate (`may_delegate`)."
  )
  .add(
    described(
      "Make a child key",
      "A key for a sub-agent, spending from the same account: its cap (required) fits in what this key's cap has left, its platforms among this key's. At every call a child is held to this key's current platforms, cap and liveness. Only a key its owner granted `may_delegate` makes children (otherwise NOT_ENTITLED); a child key never does; a key has at most 100 working children (by default). Revoking or rotating this key revokes its children.",
      HttpApiEndpoint.post("createChildKey", "/keys/child", {
        payload: Schema.Struct({
          label: Schema.optionalKey(Label),
          spend_cap_credits: SpendCap,
          cap_period: Schema.optionalKey(CapPeriod),
          platforms: Schema.optionalKey(Schema.NullOr(PlatformList))
        }),
        success: Schema.Struct({ ...IssuedKeyFields, parent_key_id: Schema.String }).annotate({
          identifier: "ChildKey",
          httpApiStatus: 201
        }),
        error: errorsOf(
          "INVALID_INPUT",
          "KEY_REQUIRED",
          "UNAUTHORIZED",
          "AUTH_REQUIRED",
          "NOT_ENTITLED",
          "RATE_LIMITED",
          "PAYLOAD_TOO_LARGE",
          "INTERNAL"
        )
      })
    ),
    described(
      "List child keys",
      "The child keys this key made (revoked ones for 30 days), never their secrets.",
      HttpApiEndpoint.get("listChildKeys", "/keys/children", {
        success: Schema.Struct({ parent_key_id: Schema.String, keys: Schema.Array(KeyListing) }),
        error: errorsOf("KEY_REQUIRED", "UNAUTHORIZED", "NOT_ENTITLED", "INTERNAL")
      })
    ),
    described(
      "Revoke a child key",
      "One of this key's child keys stops working at once.",
      HttpApiEndpoint.post("revokeChildKey", "/keys/child/revoke", {
        payload: Schema.Struct({ key_id: KeyId }),
        success: Schema.Struct({ key_id: Schema.String, revoked_at: Timestamp }),
        error: errorsOf(
          "NOT_FOUND",
          "INVALID_INPUT",
          "KEY_REQUIRED",
          "UNAUTHORIZED",
          "NOT_ENTITLED",
          "RATE_LIMITED",
          "PAYLOAD_TOO_LARGE",
          "INTERNAL"
        )
      })
    ),
    described(
      "Change a child key",
      "Sets one of this key's child keys' cap (it fits in what this key's cap has left; it cannot be cleared) or platforms (among this key's; `null`: this key's): an absent field stays as it is. The cap counts what the child already spent in its period.",
      HttpApiEndpoint.post("updateChildKey", "/keys/child/update", {
        payload: Schema.Struct({
          key_id: KeyId,
          spend_cap_credits: Schema.optionalKey(SpendCap),
          platforms: Schema.optionalKey(Schema.NullOr(PlatformList))
        }),
        success: KeyListing,
        error: errorsOf(
          "NOT_FOUND",
          "INVALID_INPUT",
          "KEY_REQUIRED",
          "UNAUTHORIZED",
          "NOT_ENTITLED",
          "PAYLOAD_TOO_LARGE",
          "INTERNAL"
        )
      })
    )
  )
  .middleware(PlainInput)
  .middleware(SpendKeyAuth)
