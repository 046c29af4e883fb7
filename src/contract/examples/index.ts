import stored from "./responses.json" with { type: "json" }

/**
 * Real answers of the service, taken by `npm run examples` (bench/responseExamples.ts) from a
 * service started with no configuration, on the default simulated world: the mint of a trial key,
 * each data operation's documented request sample sent with that key, then the key's usage and
 * receipts. Written at `baseUrl` and with the default hosts; the published document rewrites both.
 */
export interface ResponseExamples {
  readonly world: string
  readonly baseUrl: string
  /** The trial key's answers by operation id: `mintKey`, `get_usage`, `listReceipts`, `getReceipt`. */
  readonly account: {
    readonly mintKey: { readonly account_id: string } & Record<string, unknown>
    readonly [operationId: string]: unknown
  }
  /** The data operations' answers by operation id. */
  readonly data: Readonly<Record<string, unknown>>
}

export const responseExamples: ResponseExamples = stored

/**
 * A response's example as `examples` (one named example): Scalar, which /docs runs, shows those and
 * not a media type's `example`.
 */
export const answerExample = (value: unknown) => ({
  answer: { summary: "The service's answer to the request sample", value }
})
