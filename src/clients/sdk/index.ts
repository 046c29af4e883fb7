/**
 * The typed client of the service, derived from the same contract as the server: an Effect
 * service (`SvcClient`) and a Promise facade (`createClient`). Errors are the contract's error
 * classes, one per problem code.
 */
export * from "../../contract/errors.ts"
export { createClient, type PromiseClient } from "./promise.ts"
export { followingOffer, offerOf } from "./resume.ts"
export { defaultRetryPolicy, type RetryPolicy } from "./retry.ts"
export {
  type ClientOptions,
  type ErrorOf,
  makeSvcClient,
  type SuccessOf,
  SvcClient,
  type SvcClientShape,
  svcApi,
  withIdempotencyKey
} from "./SvcClient.ts"
export { KeyCapReached, type Usage, usageOf, type WithUsage } from "./usage.ts"
export { type ReceiptRejection, type ReceiptVerification, verifyReceipt } from "./verifyReceipt.ts"
export { type X402PayerOptions, X402PaymentRefused, X402SigningFailed } from "./x402Payer.ts"
