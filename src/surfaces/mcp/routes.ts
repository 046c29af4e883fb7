import { createMcpHandler, isJsonContentType, type McpHttpHandler } from "@modelcontextprotocol/server"
import { Context, Effect, Result } from "effect"
import {
  HttpEffect,
  HttpRouter,
  type HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { AppConfig } from "../../config.ts"
import type { Caller } from "../../contract/api.ts"
import { type McpMount, mcpMounts, mountUrl } from "../../contract/mcpMounts.ts"
import { grantedDelegation } from "../../domain/accounts.ts"
import { bearerCredential } from "../../identity/authorization.ts"
import { Bearers } from "../../identity/Bearers.ts"
import type { AnyOperation } from "../../operations/Operation.ts"
import type { Checkout } from "../../payments/Checkout.ts"
import type { PaymentRails } from "../../payments/PaymentRail.ts"
import type { Audit } from "../../services/Audit.ts"
import type { Keys } from "../../services/Keys.ts"
import { announcedBodyTooLarge, bodyTooLarge } from "../common/limits.ts"
import { Problems } from "../common/problems.ts"
import { challengeResponse, protectedResourceMetadata, protectedResourcePath } from "./auth.ts"
import { McpBearer, resolveBearer } from "./bearer.ts"
import {
  answerAgain,
  type FastAnswer,
  type FastCatalogue,
  type FastListing,
  fastCallOf,
  fastCatalogue,
  fastListingOf,
  type KeptAnswer,
  listingsFor,
  type RequestHeaders
} from "./fastPath.ts"
import { allowedHostnames, hostGuard } from "./guards.ts"
import { childKeyTools, managementInstructions, managementTools } from "./managementTools.ts"
import { authInfoOf, makeSession, mcpServerFactory, serverInfoOf } from "./server.ts"
import { type McpTool, mountTools, registryTools, type ToolServices } from "./tools.ts"

/** One catalogue of a mount, served by the SDK and, for a plain `tools/call`, by the hot path. */
interface Served<R> {
  readonly handler: McpHttpHandler
  readonly fast: FastCatalogue<R>
  /** The SDK's answer to a plain listing, asked once per era and version. */
  readonly listing: (listing: FastListing) => Promise<KeptAnswer | undefined>
}

const fastResponse = ({ headers, body }: FastAnswer) => {
  const { "content-type": contentType, ...rest } = headers
  return HttpServerResponse.text(body, { status: 200, contentType, headers: rest })
}

/** A mount's two catalogues: a spend key's data tools, and a management token's (plus management). */
interface MountHandlers<R> {
  /** A spend key's: data tools (and get_usage) only. */
  readonly data: Served<R>
  /** A spend key its owner lets delegate, on /mcp only: the data and child-key tools. */
  readonly delegating?: Served<R>
  readonly management: Served<R>
}

/** The SDK's answer to a body it could not read (the client went away while sending it). */
const unreadableBody = HttpServerResponse.jsonUnsafe(
  {
    jsonrpc: "2.0",
    error: { code: -32700, message: "Parse error: the request body could not be read" },
    id: null
  },
  { status: 400 }
)

/**
 * The body of a JSON POST that announced its length (already within the limit), read as the SDK
 * reads it; `undefined` leaves the request to the SDK unread, and a body that cannot be read is
 * answered as the SDK answers it.
 */
const announcedBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" &&
  request.headers["content-length"] !== undefined &&
  isJsonContentType(request.headers["content-type"] ?? null)
    ? Effect.match(request.arrayBuffer, {
        onFailure: () => unreadableBody,
        onSuccess: (bytes) => {
          const text = new TextDecoder().decode(bytes)
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          return { bytes, json }
        }
      })
    : Effect.succeed(undefined)

/** What a spend key's connection tells its client beyond the data tools. */
const childKeyInstructions =
  " This connection's spend key may also delegate (its owner's grant): create_child_key hands a sub-agent a key with a spend cap and platforms within this key's, update_child_key changes them, list_child_keys and revoke_child_key."

/** What every tool of a mount needs: the operations' services, the data and management tools'. */
type McpToolServices<R> =
  | R
  | Exclude<ToolServices, Caller>
  | McpBearer
  | Keys
  | Checkout
  | PaymentRails
  | Audit

/**
 * The MCP surface, a Layer of routes beside REST: one stateless Streamable HTTP endpoint per mount
 * (2026-07-28 and, through the SDK's stateless fallback, 2025 clients) and the RFC 9728 documents.
 */
export const McpRoutes = <R>(operations: ReadonlyArray<AnyOperation<R>>) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const config = yield* AppConfig
      const problems = yield* Problems
      const bearers = yield* Bearers
      const tools = registryTools(operations, config.hosts)
      const foreignHost = hostGuard(allowedHostnames(config.baseUrl))
      const metadata = (path: "" | `/${string}`, name: string) =>
        router.add(
          "GET",
          protectedResourcePath(path),
          HttpServerResponse.jsonUnsafe(protectedResourceMetadata(config.baseUrl, path, name), {
            headers: { "access-control-allow-origin": "*" }
          })
        )

      // Untraced, as the metered path is: every MCP request passes here. The steps up to the call
      // are a generator that returns the call instead of running it: no generator is suspended
      // while the tool's pipeline runs (README, "No generator suspended under another").
      type Answer = Effect.Effect<
        HttpServerResponse.HttpServerResponse,
        HttpServerError.HttpServerError,
        Exclude<McpToolServices<R>, McpBearer> | HttpServerRequest.HttpServerRequest
      >
      const answered = (response: HttpServerResponse.HttpServerResponse): Answer => Effect.succeed(response)
      const steps = Effect.fnUntraced(function* (
        mount: McpMount,
        /** The mount's URL, which an access token must be for. */
        resource: string,
        handlers: MountHandlers<McpToolServices<R>>
      ) {
        yield* Effect.annotateCurrentSpan("mcp.mount", mount.path)
        const request = yield* HttpServerRequest.HttpServerRequest
        const refused = foreignHost(request.headers)
        if (refused !== undefined) return answered(refused)
        const announced = announcedBodyTooLarge(request.headers, config.maxBodyBytes)
        if (announced !== undefined) return answered(problems.render(announced))

        const secret = bearerCredential(request.headers.authorization) ?? ""
        const found = yield* Effect.result(
          resolveBearer(bearers, secret, bearers.clientIp(request), resource)
        )
        if (found._tag === "Failure") {
          const metadataUrl = `${config.baseUrl}${protectedResourcePath(mount.path)}`
          return answered(challengeResponse(problems, found.failure, config.baseUrl, metadataUrl))
        }
        const bearer = found.success
        // A management token's connection adds the management tools (spec rule 7); a spend key its
        // owner lets delegate adds the child-key tools on /mcp; any other spend key sees data tools.
        const served =
          bearer.governor !== undefined
            ? handlers.management
            : handlers.delegating !== undefined &&
                Result.isSuccess(bearer.caller) &&
                grantedDelegation(bearer.caller.success.key)
              ? handlers.delegating
              : handlers.data
        const body = yield* announcedBody(request)
        if (HttpServerResponse.isHttpServerResponse(body)) return answered(body)
        const fast =
          body === undefined
            ? undefined
            : fastCallOf(served.fast, request.headers as RequestHeaders, body.json)
        if (fast !== undefined) {
          // A plain tool call, run here as this bearer, in this request's fiber.
          const call: Answer = Effect.map(
            Effect.provideService(fast.tool.call(fast.args), McpBearer, bearer),
            (result) => fastResponse(fast.answer(result))
          )
          return call
        }
        const listing =
          body === undefined ? undefined : fastListingOf(request.headers as RequestHeaders, body.json)
        if (listing !== undefined) {
          const kept = yield* Effect.promise(() => served.listing(listing))
          if (kept !== undefined) return answered(fastResponse(answerAgain(kept, listing.id)))
        }
        // Tool calls run as this bearer, in this request's context (services, span).
        const context = yield* Effect.context<Exclude<McpToolServices<R>, McpBearer>>()
        const session = makeSession(Context.add(context, McpBearer, bearer))
        const caller = Result.getOrUndefined(bearer.caller)
        const authInfo = authInfoOf(secret, caller?.account.id ?? bearer.governor?.tokenId ?? "", session)
        const handled = HttpEffect.fromWebHandler((web) =>
          // A body read above is handed over as the very bytes that came.
          served.handler.fetch(body === undefined ? web : new Request(web, { body: body.bytes }), {
            authInfo
          })
        )
        // A body without Content-Length is measured by the SDK; its 413 becomes our problem too.
        const slow: Answer = Effect.map(handled, (response) =>
          response.status === 413 ? problems.render(bodyTooLarge(config.maxBodyBytes)) : response
        )
        return slow
      })
      const serve = (mount: McpMount, resource: string, handlers: MountHandlers<McpToolServices<R>>) =>
        Effect.flatten(steps(mount, resource, handlers))

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
          const served: Served<McpToolServices<R>> = {
            handler,
            fast: fastCatalogue(catalogue, serverInfoOf(mount)),
            listing: listingsFor(handler)
          }
          return served
        })
      for (const mount of mcpMounts) {
        const data = mountTools(mount, tools)
        const handlers: MountHandlers<McpToolServices<R>> = {
          data: yield* handlerOf(mount, data),
          // The child-key tools on /mcp only, never on a platform's mount.
          ...(mount.platform === undefined
            ? { delegating: yield* handlerOf(mount, [...data, ...childKeyTools], childKeyInstructions) }
            : {}),
          management: yield* handlerOf(mount, [...data, ...managementTools], managementInstructions)
        }
        const catalog = mount.platform === undefined ? "every tool" : `${mount.platform} tools`
        yield* metadata(mount.path, `svc data API over MCP (${catalog})`)
        yield* router.add("*", mount.path, serve(mount, mountUrl(config.baseUrl, mount), handlers))
      }
    })
  )
