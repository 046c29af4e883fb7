import { Effect, Layer, Option } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { AppConfig } from "../config.ts"

/**
 * Spans exported over OTLP/HTTP (JSON) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: each request
 * (the HTTP server's span), each metered call (operation, account, key and receipt), each
 * database statement and transaction, each upstream request. Unset, no tracer is installed, and
 * the paths that check for one stay untraced. The exporter reads the other `OTEL_*` settings
 * (headers, timeouts, batch size,
 * compression); the service is named `svc-data-api`.
 */
export const tracingLayer = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.isNone(config.otlpEndpoint)
      ? Layer.empty
      : OtlpTracer.layerFromConfig({ resource: { serviceName: "svc-data-api" } }).pipe(
          Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer])
        )
  )
)
