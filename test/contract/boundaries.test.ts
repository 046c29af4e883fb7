import { existsSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { filesUnder } from "../support/sources.ts"

/**
 * The contract owns declarations, not implementations: what `src/contract/` imports, and what
 * those imports import in turn, stays in the contract, the domain (pure rules) and the
 * configuration's shape (`src/config.ts`, which reads nothing until its Layer is built). Services,
 * the upstream, the store, the operations' implementations, the metering pipeline and the
 * surfaces are never reached.
 */
const root = resolve(import.meta.dirname, "../..")
const src = join(root, "src")
const allowed = [join(src, "contract") + "/", join(src, "domain") + "/", join(src, "config.ts")]
const isAllowed = (file: string) => allowed.some((place) => file === place || file.startsWith(place))

const importPattern =
  /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm

/** The modules a module's text imports (type-only imports included), resolved from `file`; packages are left out. */
const importsOf = (text: string, file: string): Array<string> =>
  [...text.matchAll(importPattern)]
    .map((match) => match[1] ?? match[2] ?? match[3] ?? "")
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => {
      const target = resolve(dirname(file), specifier)
      return [target, `${target}.ts`, join(target, "index.ts")].find(existsSync) ?? target
    })

const localImports = (file: string) => importsOf(readFileSync(file, "utf8"), file)

/** Every module the contract reaches, each with the chain of imports that reached it. */
const reachedFromContract = () => {
  const chains = new Map<string, ReadonlyArray<string>>()
  const queue = filesUnder(join(src, "contract")).map((file) => [file] as ReadonlyArray<string>)
  while (queue.length > 0) {
    const chain = queue.shift()!
    const file = chain[chain.length - 1]!
    if (chains.has(file)) continue
    chains.set(file, chain)
    if (isAllowed(file)) for (const target of localImports(file)) queue.push([...chain, target])
  }
  return chains
}

describe("the contract's boundaries", () => {
  it("reaches only the contract, the domain and the configuration", () => {
    const outside = [...reachedFromContract()]
      .filter(([file]) => !isAllowed(file))
      .map(([, chain]) => chain.map((file) => relative(root, file)).join(" -> "))
    assert.deepStrictEqual(outside, [])
  })

  it("reads every kind of import, so that it cannot pass by reading none", () => {
    const file = join(src, "contract/example.ts")
    const text = [
      'import { Schema } from "effect"',
      'import { a } from "../services/A.ts"',
      'import type { B } from "../upstream/B.ts"',
      "import {",
      "  c,",
      "  type D",
      '} from "../store/C.ts"',
      'export * from "../operations/E.ts"',
      'export { f } from "../surfaces/F.ts"',
      'import "../metering/G.ts"',
      'const h = () => import("../server.ts")',
      'const text = "words import from \\"nowhere\\""'
    ].join("\n")
    assert.deepStrictEqual(
      importsOf(text, file).map((target) => relative(src, target)),
      [
        "services/A.ts",
        "upstream/B.ts",
        "store/C.ts",
        "operations/E.ts",
        "surfaces/F.ts",
        "metering/G.ts",
        "server.ts"
      ]
    )
    const reached = [...reachedFromContract().keys()].map((target) => relative(src, target))
    assert.includeMembers(reached, [
      "domain/plans.ts",
      "domain/accounts.ts",
      "contract/records.ts",
      "config.ts"
    ])
  })
})

/** Every cycle of relative imports among `files` (strongly connected components of two or more, or a self-import). */
const cyclesAmong = (
  files: ReadonlyArray<string>,
  importsOfFile: (file: string) => ReadonlyArray<string>
) => {
  const known = new Set(files)
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const cycles: Array<Array<string>> = []
  let counter = 0
  const visit = (file: string) => {
    index.set(file, counter)
    low.set(file, counter)
    counter++
    stack.push(file)
    onStack.add(file)
    for (const target of importsOfFile(file).filter((candidate) => known.has(candidate))) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) === index.get(file)) {
      const component: Array<string> = []
      let member: string | undefined
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || importsOfFile(file).includes(file)) cycles.push(component.sort())
    }
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return cycles
}

describe("the house's structure", () => {
  const sources = filesUnder(src)

  it("has no import circle in src/ (type-only imports included)", () => {
    const cycles = cyclesAmong(sources, localImports).map((cycle) => cycle.map((file) => relative(src, file)))
    assert.deepStrictEqual(cycles, [])
  })

  it("the check finds a circle", () => {
    const edges: Record<string, ReadonlyArray<string>> = { a: ["b"], b: ["c"], c: ["a"], d: ["a"], e: ["e"] }
    assert.deepStrictEqual(
      cyclesAmong(Object.keys(edges), (file) => edges[file] ?? []),
      [["a", "b", "c"], ["e"]]
    )
  })

  it("imports only downward: each room of src/ (a folder or a top-level file) imports only rooms below it", () => {
    // From the ground up: pure rules and shapes, then the store and the upstream, the services, what
    // runs on them, identity, the metering, the surfaces, and the start-up files in their order.
    const order = [
      "domain",
      "strippedTypes.ts",
      "bundledStart.ts",
      "startSteps.ts",
      "config.ts",
      "contract",
      "store",
      "upstream",
      "observability",
      "services",
      "operations",
      "oauth",
      "payments",
      "operator",
      "webhooks",
      "logging.ts",
      "identity",
      "metering",
      "surfaces",
      "launchReport.ts",
      "service.ts",
      "clients",
      "launch.ts",
      "main.ts"
    ]
    const roomOf = (file: string) => relative(src, file).split("/")[0]!
    const unplaced = [...new Set(sources.map(roomOf))].filter((room) => !order.includes(room))
    assert.deepStrictEqual(unplaced, [], "every room has its place in the order")
    const upward = sources.flatMap((file) =>
      localImports(file)
        .filter((target) => target.startsWith(`${src}/`) && roomOf(target) !== roomOf(file))
        .filter((target) => order.indexOf(roomOf(target)) > order.indexOf(roomOf(file)))
        .map((target) => `${relative(src, file)} -> ${relative(src, target)}`)
    )
    assert.deepStrictEqual(upward, [])
  })

  it("runs no SQL in the surfaces: they translate wires, the services and the metering hold the SQL", () => {
    const withSql = filesUnder(join(src, "surfaces"))
      .filter((file) => /from "effect\/sql"|\bsql`/.test(readFileSync(file, "utf8")))
      .map((file) => relative(src, file))
    assert.deepStrictEqual(withSql, [])
  })

  it("the clients import only the contract, the domain and client code: no server module", () => {
    const rooms = ["clients/", "contract/", "domain/"]
    const reached = filesUnder(join(src, "clients")).flatMap((file) =>
      localImports(file)
        .map((target) => relative(src, target))
        .filter((target) => !rooms.some((room) => target.startsWith(room)))
        .map((target) => `${relative(src, file)} -> ${target}`)
    )
    assert.deepStrictEqual(reached, [])
  })

  it("the clients load x402 and viem only when they pay: import() or a type import, never a static one", () => {
    const staticImport =
      /^\s*(?:import|export)\s+(?!type\b)(?:[\w*$\s,]*\{[^}]*\}|[\w*$\s,]+)\s*from\s*["'](?:viem|@x402\/)/m
    const loadsAtStart = filesUnder(join(src, "clients"))
      .filter((file) => staticImport.test(readFileSync(file, "utf8")))
      .map((file) => relative(src, file))
    assert.deepStrictEqual(loadsAtStart, [])
    const payer = readFileSync(join(src, "clients/sdk/x402Payer.ts"), "utf8")
    assert.match(payer, /import\("@x402\/evm\/exact\/client"\)/, "the payer loads the library when it pays")
    assert.isFalse(staticImport.test('import type { LocalAccount } from "viem"'))
    assert.isTrue(staticImport.test('import { privateKeyToAccount } from "viem/accounts"'))
    assert.isTrue(
      staticImport.test('import { Data } from "effect"\nimport * as x402 from "@x402/core/client"')
    )
    assert.isFalse(staticImport.test('import { Data } from "effect"\nimport type { A } from "viem"'))
  })

  it("the surfaces reach the metering only through its front door and its receipts", () => {
    const door = [
      "metering/meterDataCall.ts",
      "metering/Receipts.ts",
      "metering/receipt.ts",
      // The receipts' signatures: the surfaces sign what they serve.
      "metering/ReceiptSigner.ts"
    ]
    const reached = filesUnder(join(src, "surfaces")).flatMap((file) =>
      localImports(file)
        .map((target) => relative(src, target))
        .filter((target) => target.startsWith("metering/") && !door.includes(target))
        .map((target) => `${relative(src, file)} -> ${target}`)
    )
    assert.deepStrictEqual(reached, [])
  })
})
