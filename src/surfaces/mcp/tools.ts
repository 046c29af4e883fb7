import type { CallToolResult, StandardSchemaWithJSON, ToolAnnotations } from "@modelcontextprotocol/server"
import { Clock, Effect, Result } from "effect"
import { AppConfig } from "../../config.ts"
import { Caller } from "../../contract/api.ts"
import type { McpMount } from "../../contract/mcpMounts.ts"
import { receiptSignatureMetaKey } from "../../contract/receiptSignature.ts"
import { type Hosts, rehost, rehostJson } from "../../domain/identifiers/index.ts"
import type { Platform } from "../../domain/plans.ts"
import { type MeteringServices, meterDataCall } from "../../metering/meterDataCall.ts"
import { ReceiptSigner, signedAnswer } from "../../metering/ReceiptSigner.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import type { Ids } from "../../services/Ids.ts"
import { Usage } from "../../services/Usage.ts"
import { usageReport } from "../usageReport.ts"
import { McpBearer } from "./bearer.ts"
import { pricingMetaKey, pricingOf } from "./pricing.ts"
import { toolArgumentsDecoder } from "./toolArguments.ts"
import { meteredResult, settledResult, toToolResult } from "./toolResults.ts"
import {
  inputSchema,
  noArguments,
  outputSchema,
  toolInputJsonSchema,
  toolOutputJsonSchema,
  usageOutputJsonSchema
} from "./toolSchemas.ts"
import { payingToolCall, paymentMetaKey, pricedCall } from "./x402.ts"

/** What every data tool call needs besides the operations' own services. */
export type ToolServices = Caller | Usage | MeteringServices | ReceiptSigner

/** Data tools read; what they read comes from outside the service. */
const dataAnnotations: ToolAnnotations = { readOnlyHint: true, openWorldHint: true }

export interface McpTool<R> {
  readonly name: string
  /** The platform of a data tool; `get_usage` belongs to every mount. */
  readonly platform: Platform | undefined
  readonly description: string
  readonly inputSchema: StandardSchemaWithJSON<Record<string, unknown>>
  readonly outputSchema: StandardSchemaWithJSON
  readonly annotations: ToolAnnotations
  /** The tool's `_meta` in the catalogue: a data tool's price (`svc/pricing`). */
  readonly meta?: Record<string, unknown>
  /** Never fails: metered failures and defects are error results. */
  readonly call: (
    args: Record<string, unknown>,
    /** The request's `_meta` (x402's MCP transport pays with `_meta["x402/payment"]`). */
    meta?: Readonly<Record<string, unknown>> | undefined
  ) => Effect.Effect<CallToolResult, never, R>
}

/**
 * One registry operation as a tool: REST's parameters as arguments, the metered pipeline, the
 * envelope. Its description and schemas name `hosts` where the declaration names the default ones.
 */
export const operationTool = <R>(operation: AnyOperation<R>, hosts: Hosts): McpTool<R | ToolServices> => {
  const decode = toolArgumentsDecoder(operation)
  return {
    name: operation.id,
    platform: operation.platform,
    description: rehost(hosts)(operation.description),
    inputSchema: inputSchema(rehostJson(hosts, toolInputJsonSchema(operation))),
    outputSchema: outputSchema(rehostJson(hosts, toolOutputJsonSchema(operation))),
    annotations: dataAnnotations,
    meta: { [pricingMetaKey]: pricingOf(operation) },
    // hot path
    call: (args: Record<string, unknown>, meta?: Readonly<Record<string, unknown>>) => {
      const priced = pricedCall(typeof args.max_credits === "number" ? args.max_credits : undefined)
      const meter = Effect.flatMap(Caller, (caller) => {
        const metered = meterDataCall(
          operation,
          caller,
          Effect.suspend(() => decode(args))
        )
        // Signing only when asked (`_meta["svc/receipt-signature"]: true`): the default call pays nothing for it.
        return Effect.flatMap(
          meta?.[receiptSignatureMetaKey] === true
            ? Effect.flatMap(ReceiptSigner, (signer) => Effect.flatMap(metered, signedAnswer(signer)))
            : metered,
          priced
        )
      })
      // Only a call carrying an x402 payment takes the payment step.
      const payment = meta?.[paymentMetaKey]
      return settledResult(
        payment === undefined
          ? Effect.flatMap(meter, meteredResult)
          : payingToolCall(payment, meter, meteredResult, (refused) => settledResult(Effect.fail(refused)))
      )
    }
  }
}

export const usageTool: McpTool<ToolServices> = {
  name: "get_usage",
  platform: undefined,
  description:
    "Free, and exempt from the rate limit. The key's plan, the platforms it can call, the free-tier budget left today for this IP, the balance, today's spend and 30 days of history, and the upgrade link.",
  inputSchema: inputSchema(noArguments),
  outputSchema: outputSchema(usageOutputJsonSchema),
  annotations: dataAnnotations,
  call: Effect.fn("mcp.get_usage")(function* () {
    const caller = yield* Caller
    const config = yield* AppConfig
    const facts = yield* Effect.orDie((yield* Usage).facts(caller.account.id, caller.key.id, caller.ip))
    return usageReport(caller, facts, yield* Clock.currentTimeMillis, config)
  }, toToolResult)
}

/** Every data tool of a registry, run as the bearer's caller, built once: the mounts share them. */
export const registryTools = <R>(operations: ReadonlyArray<AnyOperation<R>>, hosts: Hosts) =>
  [...operations.map((operation) => operationTool(operation, hosts)), usageTool].map(callingAsBearer)

/** A data tool run as the bearer's caller, or answering why the bearer cannot spend. */
export const callingAsBearer = <R>(
  tool: McpTool<R>
): McpTool<Exclude<R, Caller> | McpBearer | AppConfig | Ids> => ({
  ...tool,
  call: (args, meta) =>
    Effect.flatMap(
      McpBearer,
      ({ caller }): Effect.Effect<CallToolResult, never, Exclude<R, Caller> | AppConfig | Ids> =>
        Result.isFailure(caller)
          ? toToolResult(Effect.fail(caller.failure))
          : Effect.provideService(tool.call(args, meta), Caller, caller.success)
    )
})

/** The tools a mount serves: every tool on `/mcp`, one platform's (and `get_usage`) on `/mcp/<platform>`. */
export const mountTools = <R>(mount: McpMount, tools: ReadonlyArray<McpTool<R>>) =>
  tools.filter(
    (tool) => mount.platform === undefined || tool.platform === undefined || tool.platform === mount.platform
  )
