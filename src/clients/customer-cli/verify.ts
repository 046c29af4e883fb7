import { existsSync, readFileSync } from "node:fs"
import { Console, Data, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type ReceiptVerification, verifyReceipt } from "../sdk/verifyReceipt.ts"
import { json, show } from "./flags.ts"
import { dim, red } from "./output.ts"
import { session, UsageError, withKey } from "./session.ts"

/** Some receipts did not verify (exit 1); the message names each. */
export class ReceiptsUnverified extends Data.TaggedError("ReceiptsUnverified")<{
  readonly message: string
}> {}

type Jwks = Parameters<typeof verifyReceipt>[1]

/**
 * The receipts of a file: one receipt (JSON), a list or a page of them (`{"receipts": [...]}`, as
 * `svc receipts --json` prints), or a JSON Lines export (one receipt a line).
 */
const receiptsInFile = (path: string): Effect.Effect<ReadonlyArray<unknown>, UsageError> =>
  Effect.try({
    try: () => {
      const text = readFileSync(path, "utf8")
      if (/^receipt_id,/.test(text))
        throw new Error(
          "a CSV export holds each receipt's signature but not the receipt it signs; verify the JSON Lines export (svc receipts export --format jsonl)"
        )
      try {
        const parsed = JSON.parse(text) as unknown
        if (Array.isArray(parsed)) return parsed
        if (
          typeof parsed === "object" &&
          parsed !== null &&
          Array.isArray((parsed as { receipts?: unknown }).receipts)
        )
          return (parsed as { receipts: ReadonlyArray<unknown> }).receipts
        return [parsed]
      } catch {
        return text
          .split("\n")
          .filter((line) => line.trim().length > 0)
          .map((line) => JSON.parse(line) as unknown)
      }
    },
    catch: (error) => new UsageError({ message: `${path}: ${(error as Error).message}` })
  })

/** Reads JSON over `fetch`, as the service sent it (no schema in between: every member counts). */
const fetchJson = (url: string, bearer: string | undefined) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(
        url,
        bearer === undefined ? {} : { headers: { authorization: `Bearer ${bearer}` } }
      )
      const body = (await response.json()) as { readonly message?: string }
      if (!response.ok) throw new Error(body.message ?? `${response.status}`)
      return body as unknown
    },
    catch: (error) => new UsageError({ message: `${url}: ${(error as Error).message}` })
  })

const nameOf = (receipt: unknown, at: number) =>
  typeof receipt === "object" && receipt !== null && typeof (receipt as { id?: unknown }).id === "string"
    ? (receipt as { id: string }).id
    : `receipt #${at + 1}`

/**
 * `svc receipts verify <id|file>`: checks each receipt's signature against the service's published
 * keys (or `--jwks FILE`, offline), and that it signs exactly that receipt. Exits 1 naming every
 * receipt that does not verify.
 */
export const receiptsVerify = Command.make(
  "verify",
  {
    json,
    target: Argument.String("id-or-file").pipe(
      Argument.withDescription(
        "A receipt id (fetched with this CLI's key), or a file: one receipt, a list, or a JSON Lines export."
      )
    ),
    jwks: Flag.String("jwks").pipe(
      Flag.withDescription("A key set file (the service's /.well-known/jwks.json) to verify offline."),
      Flag.optional
    )
  },
  ({ json: asJson, target, jwks }) =>
    Effect.gen(function* () {
      const fromFile = existsSync(target)
      // The key only to fetch a receipt by id; the key set is public, and a file with --jwks needs nothing.
      const connection = fromFile ? (Option.isSome(jwks) ? undefined : yield* session) : yield* withKey
      const bearer = connection?.config.key ?? connection?.config.management_token
      const receipts = fromFile
        ? yield* receiptsInFile(target)
        : [yield* fetchJson(`${connection!.baseUrl}/v1/receipts/${encodeURIComponent(target)}`, bearer)]
      const keySet = (
        Option.isSome(jwks)
          ? yield* Effect.try({
              try: () => JSON.parse(readFileSync(jwks.value, "utf8")) as Jwks,
              catch: (error) => new UsageError({ message: `${jwks.value}: ${(error as Error).message}` })
            })
          : yield* fetchJson(`${connection!.baseUrl}/.well-known/jwks.json`, undefined)
      ) as Jwks
      const results: Array<{ readonly id: string } & ReceiptVerification> = []
      for (const [at, receipt] of receipts.entries())
        results.push({
          id: nameOf(receipt, at),
          ...(yield* Effect.promise(() => verifyReceipt(receipt, keySet)))
        })
      const failed = results.filter((result) => !result.valid)
      yield* show(asJson, results, () =>
        results
          .map((result) =>
            result.valid
              ? `verified  ${result.id}  ${dim(`key ${result.kid}`)}`
              : red(`FAILED    ${result.id}  ${result.reason}: ${result.message}`)
          )
          .join("\n")
      )
      if (failed.length > 0)
        return yield* new ReceiptsUnverified({
          message: `${failed.length} of ${results.length} receipts do not verify: ${failed
            .map((result) => `${result.id} (${result.valid ? "" : result.reason})`)
            .join(", ")}`
        })
      if (!asJson) yield* Console.error(dim(`${results.length} receipts verified.`, process.stderr))
    })
).pipe(
  Command.withDescription(
    "Check receipts' signatures against the service's keys (/.well-known/jwks.json, or --jwks FILE offline): a receipt id, or a file (JSON, or a JSON Lines export). Exits 1 naming each receipt that does not verify."
  )
)
