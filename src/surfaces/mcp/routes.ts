import { createMcpHandler, type McpHttpHandler } from "@modelcontextprotocol/server"
import { Context, Effect, Redacted, Result } from "effect"
import { HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { AppConfig } from "../../config.ts"
import type { Caller } from "../../contract/api.ts"
import { OAuthServer } from "../../oauth/OAuthServer.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import type { Checkout } from "../../payments/Checkout.ts"
import type { PaymentRails } from "../../payments/PaymentRail.ts"
import type { Keys } from "../../services/Keys.ts"
import { Identity } from "../common/identity.ts"
import { announcedBodyTooLarge, bodyTooLarge } from "../common/limits.ts"
import { Problems } from "../common/problems.ts"
import { challengeResponse, protectedResourceMetadata, protectedResourcePath } from "./auth.ts"
import { McpBearer, resolveBearer } from "./bearer.ts"
import { allowedHostnames, foreignHostRejection } from "./guards.ts"
import { managementInstructions, managementTools } from "./managementTools.ts"
import { type McpMount, mcpMounts, mountTools, mountUrl } from "./mounts.ts"
import { authInfoOf, makeSession, mcpServerFactory } from "./server.ts"
import { type McpTool, registryTools, type ToolServices } from "./tools.ts"

/** A mount's two catalogues: a spend key's data tools, and a management token's (plus management). */
interface MountHandlers {
  readonly data: McpHttpHandler
  readonly management: McpHttpHandler
}

/** What every tool of a mount needs: the operations' services, the data and management tools'. */
type McpToolServices<R> = R | Exclude<ToolServices, Caller> | McpBearer | Keys | Checkout | PaymentRails

/**
 * The MCP surface, a Layer of routes beside REST: one stateless Streamable HTTP endpoint per mount
 * (2026-07-28 and, through the SDK's stateless fallback, 2025 clients) and the RFC 9728 documents.
 */
export const McpRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const config = yield* AppConfig
      const problems = yield* Problems
      const identity = yield* Identity
      const oauth = yield* OAuthServer
      const tools = registryTools(operations, config.hosts)
      const allowed = allowedHostnames(config.baseUrl)
      const metadata = (path: "" | `/${string}`, name: string) =>
        router.add(
          "GET",
          protectedResourcePath(path),
          HttpServerResponse.jsonUnsafe(protectedResourceMetadata(config.baseUrl, path, name), {
            headers: { "access-control-allow-origin": "*" }
          })
        )

      const serve = Effect.fn("mcp.request")(function* (mount: McpMount, handlers: MountHandlers) {
        yield* Effect.annotateCurrentSpan("mcp.mount", mount.path)
        const request = yield* HttpServerRequest.HttpServerRequest
        const refused = foreignHostRejection(request.headers, allowed)
        if (refused !== undefined) return refused
        const announced = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
        if (announced !== undefined) return problems.render(announced)

        const secret = Redacted.value(yield* HttpApiBuilder.securityDecode(HttpApiSecurity.bearer))
        const resource = mountUrl(config.baseUrl, mount)
        const found = yield* Effect.result(
          resolveBearer(identity, oauth, secret, identity.clientIp(request), resource)
        )
        if (found._tag === "Failure") {
          const metadataUrl = `${config.baseUrl}${protectedResourcePath(mount.path)}`
          return challengeResponse(problems, found.failure, config.baseUrl, metadataUrl)
        }
        const bearer = found.success
        // Tool calls run as this bearer, in this request's context (services, span).
        const context = yield* Effect.context<Exclude<McpToolServices<R>, McpBearer>>()
        const session = makeSession(Context.add(context, McpBearer, bearer))
        const caller = Result.getOrUndefined(bearer.caller)
        const authInfo = authInfoOf(secret, caller?.account.id ?? bearer.governor?.tokenId ?? "", session)
        // A management token's connection adds the management tools (spec rule 7).
        const handler = bearer.governor === undefined ? handlers.data : handlers.management
        const response = yield* HttpEffect.fromWebHandler((web) => handler.fetch(web, { authInfo }))
        // A body without Content-Length is measured by the SDK; its 413 becomes our problem too.
        return response.status === 413 ? problems.render(bodyTooLarge(config.maxBodyBytes)) : response
      })

      // The SDK reports requests it refused (bad headers, unsupported versions) out of band.
      const runFork = Effect.runForkWith(yield* Effect.context<never>())
      const onerror = (error: Error) => runFork(Effect.logDebug("MCP request refused", error.message))

      yield* metadata("", "svc data API")
      const handlerOf = (
        mount: McpMount,
        catalogue: ReadonlyArray<McpTool<McpToolServices<R>>>,
        moreInstructions?: string
      ) =>
        Effect.gen(function* () {
          const handler = createMcpHandler(mcpServerFactory(mount, catalogue, moreInstructions), {
            legacy: "stateless",
            maxRequestBodySize: config.maxBodyBytes,
            onerror
          })
          yield* Effect.addFinalizer(() => Effect.promise(() => handler.close()))
          return handler
        })
      for (const mount of mcpMounts) {
        const data = mountTools(mount, tools)
        const handlers: MountHandlers = {
          data: yield* handlerOf(mount, data),
          management: yield* handlerOf(mount, [...data, ...managementTools], managementInstructions)
        }
        const catalog = mount.platform === undefined ? "every tool" : `${mount.platform} tools`
        yield* metadata(mount.path, `svc data API over MCP (${catalog})`)
        yield* router.add("*", mount.path, serve(mount, handlers))
      }
    })
  )
