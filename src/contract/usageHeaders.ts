/**
 * The usage headers of every metered answer, as the OpenAPI document states them: the plan's rate
 * limit on every answer (draft-ietf-httpapi-ratelimit-headers), and once a call is charged the
 * credits it cost and what is left, for the account and for a capped key.
 */
const integer = { type: "integer", minimum: 0 } as const

const everyAnswer = {
  "RateLimit-Policy": {
    description:
      'The plan\'s per-minute allowance: `"<plan>";q=<calls>;w=<seconds>` (draft-ietf-httpapi-ratelimit-headers).',
    schema: { type: "string" },
    example: '"flex";q=120;w=60'
  },
  RateLimit: {
    description:
      'What is left of it: `"<plan>";r=<calls left>;t=<seconds until the window ends>` (draft-ietf-httpapi-ratelimit-headers).',
    schema: { type: "string" },
    example: '"flex";r=119;t=60'
  }
} as const

const charged = {
  "Credits-Charged": { description: "The credits this call was charged.", schema: integer, example: 4 },
  "Credits-Remaining": {
    description: "The spendable credits after the call: free budget left today plus grant plus balance.",
    schema: integer,
    example: 996
  },
  "Key-Cap-Remaining": {
    description:
      "For a key with a spend cap (or a child key of one): what the tightest cap has left in its period after the call.",
    schema: integer,
    example: 46
  }
} as const

type Responses = Record<string, Record<string, unknown>>

/** A data operation's responses with the usage headers: the rate limit on each, the credits on its 200. */
export const withUsageHeaders = (responses: Responses): Responses =>
  Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      {
        ...response,
        headers: {
          ...((response.headers as Record<string, unknown> | undefined) ?? {}),
          ...everyAnswer,
          ...(status === "200" ? charged : {})
        }
      }
    ])
  )
