import type { AnyOperation } from "./Operation.ts"

/** Every data operation of the service. */
export const operations: ReadonlyArray<AnyOperation<never>> = []
