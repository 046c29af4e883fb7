import { Duration, Effect, Layer, Option, Redacted } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { AppConfig } from "../config.ts"

/**
 * Spans exported over OTLP/HTTP (JSON) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: each request (the HTTP server's span), each
 * metered call (operation, account, key and receipt), each database statement and transaction,
 * each upstream request. Unset, no tracer is installed, and the paths that check for one stay
 * untraced. The service is named `svc-data-api`.
 */
export const tracingLayer = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.otlpEndpoint, {
      onNone: () => Layer.empty,
      onSome: (url) =>
        OtlpTracer.layer({
          url,
          resource: { serviceName: "svc-data-api" },
          headers: Object.fromEntries(
            Object.entries(config.otlpHeaders).map(([name, value]) => [name, Redacted.value(value)])
          ),
          exportInterval: Duration.millis(config.otlpExportIntervalMs)
        }).pipe(Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer]))
    })
  )
)
