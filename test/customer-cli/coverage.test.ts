import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Command } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { svc } from "../../src/clients/customer-cli/commands.ts"
import { createClient, makeSvcClient } from "../../src/clients/sdk/index.ts"
import { operations } from "../../src/operations/registry.ts"

const subcommands = (command: Command.Command.Any): ReadonlyArray<Command.Command.Any> =>
  command.subcommands.flatMap((group) => group.commands)

/** A parsed flag's name: the innermost `param` of its wrappers (optional, mapped) has it. */
const flagName = (flag: unknown): string | undefined => {
  for (let at = flag as { readonly name?: unknown; readonly param?: unknown } | undefined; at; ) {
    if (typeof at.name === "string") return at.name
    at = at.param as typeof at
  }
  return undefined
}

/**
 * Every operation of the registry is reachable from the SDK (a method named by its id) and from
 * the CLI (`svc <platform> <command>`, aliased by its id, with a flag per parameter). The CLI and
 * SDK are generated from the contract, so this fails when an operation is added to the registry
 * without being declared in the contract, or when the generation drops one.
 */
describe("registry coverage of the SDK and the CLI", () => {
  it.effect("every registry operation has an SDK method, a Promise method and a CLI subcommand", () =>
    Effect.gen(function* () {
      const client = yield* makeSvcClient({ baseUrl: "http://127.0.0.1:9" }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const promises = createClient({ baseUrl: "http://127.0.0.1:9" })
      const missing: Array<string> = []
      for (const operation of operations) {
        if (typeof (client as unknown as Record<string, unknown>)[operation.id] !== "function")
          missing.push(`SDK ${operation.id}`)
        if (typeof (promises as unknown as Record<string, unknown>)[operation.id] !== "function")
          missing.push(`Promise client ${operation.id}`)
        const platform = subcommands(svc).find((command) => command.name === operation.platform)
        const command = platform && subcommands(platform).find((c) => c.alias === operation.id)
        if (command === undefined) {
          missing.push(`svc ${operation.platform} … (${operation.id})`)
          continue
        }
        // Every parameter is a flag, in kebab-case (the first is also the positional argument).
        const flags = new Set(
          (
            command as unknown as { readonly config: { readonly flags: ReadonlyArray<unknown> } }
          ).config.flags.map(flagName)
        )
        for (const name of Object.keys(operation.params.fields))
          if (!flags.has(name.replaceAll("_", "-"))) missing.push(`svc ${operation.id} --${name}`)
      }
      assert.deepStrictEqual(missing, [])
    })
  )
})
