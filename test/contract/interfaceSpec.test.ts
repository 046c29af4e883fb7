import { existsSync, readFileSync } from "node:fs"
import path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { errorCatalog } from "../../src/contract/errors.ts"
import { operations } from "../../src/operations/registry.ts"
import { signIn } from "../identity/support.ts"
import { connect, modes } from "../mcp/support.ts"
import { ipSequence } from "../support/accounts.ts"
import { TestApp, testApp } from "../support/app.ts"
import { storeName } from "../support/database.ts"

/**
 * The contract's names pinned: the endpoint table, every operation's parameters, the error table
 * and the MCP tool names are read from the contract itself (`../shared/spec/interface-spec.md`,
 * beside the repository as CI clones it) and checked against the served OpenAPI and the MCP
 * catalogue. A renamed operationId or tool, a parameter the contract (or decisions.md) does not
 * name, or a code documented under another status fails here.
 */
const repoRoot = path.resolve(import.meta.dirname, "../..")
const specPath = path.resolve(repoRoot, "../shared/spec/interface-spec.md")
const decisionsPath = path.resolve(repoRoot, "../shared/spec/decisions.md")
const absent = [specPath, decisionsPath].filter((file) => !existsSync(file))
const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false"
if (absent.length > 0 && !inCi)
  console.warn(`The contract test is skipped: ${absent.join(", ")} not found (CI fails instead).`)

// ---------------------------------------------------------------------------------------------
// Reading the Markdown

/** The lines under the first heading that starts with `heading`, up to the next heading of its level or above. */
const sectionOf = (text: string, heading: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  const start = lines.findIndex((line) => line.startsWith(heading))
  assert.notStrictEqual(start, -1, `the contract has a section "${heading}"`)
  const level = heading.match(/^#+/)![0].length
  const end = lines.findIndex(
    (line, i) => i > start && /^#+ /.test(line) && line.match(/^#+/)![0].length <= level
  )
  return lines.slice(start + 1, end === -1 ? undefined : end)
}

type Row = Readonly<Record<string, string>>

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim())

/** The first table of `lines`, each row keyed by its header's cells. */
const tableOf = (lines: ReadonlyArray<string>): ReadonlyArray<Row> => {
  const start = lines.findIndex((line) => line.trim().startsWith("|"))
  if (start === -1) return []
  const rows: Array<string> = []
  for (const line of lines.slice(start)) {
    if (!line.trim().startsWith("|")) break
    rows.push(line)
  }
  const [header, , ...body] = rows
  const names = cellsOf(header!)
  return body.map((line) => {
    const cells = cellsOf(line)
    return Object.fromEntries(names.map((name, i) => [name, cells[i] ?? ""]))
  })
}

/** The `code spans` of a cell, in order. */
const spans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!)

// ---------------------------------------------------------------------------------------------
// What the contract says

interface Parameter {
  readonly name: string
  readonly in: "query" | "header"
  readonly required: boolean | undefined
  readonly type: string
}

interface ContractOperation {
  readonly method: string
  readonly path: string
  readonly operationId: string
  /** From the operation's own section; undefined where the contract shows no parameter table. */
  readonly params: ReadonlyArray<Parameter> | undefined
}

const requiredOf = (cell: string) => (cell === "yes" ? true : cell === "no" ? false : undefined)

const readContract = (text: string) => {
  const endpoints = tableOf(sectionOf(text, "### Endpoint list")).flatMap((row) =>
    row.Method!.split(",").flatMap((method) =>
      spans(row.Path!).map((route) => ({
        method: method.trim(),
        path: route,
        operationId: row.operationId === "-" ? undefined : row.operationId,
        auth: row.Auth!
      }))
    )
  )
  const common: ReadonlyArray<Parameter> = tableOf(sectionOf(text, "### Common parameters")).map((row) => ({
    name: row.Name!,
    in: row.In as "query" | "header",
    required: requiredOf(row.Required!),
    type: row.Type!
  }))
  const header = common.filter((parameter) => parameter.in === "header")
  const commonQuery = common.filter((parameter) => parameter.in === "query")
  const operations: Array<ContractOperation> = endpoints.flatMap((endpoint): Array<ContractOperation> => {
    if (endpoint.operationId === undefined) return []
    const heading = `### ${endpoint.method} ${endpoint.path} (${endpoint.operationId})`
    const rows = tableOf(sectionOf(text, heading)).filter((row) => row.Param !== undefined)
    if (rows.length === 0) return [{ ...endpoint, operationId: endpoint.operationId, params: undefined }]
    const own = rows
      .filter((row) => !row.Param!.startsWith("+ common parameters"))
      .map(
        (row): Parameter => ({
          name: row.Param!,
          in: "query",
          required: requiredOf(row.Required!),
          type: row.Type!
        })
      )
    const withCommon = rows.some((row) => row.Param!.startsWith("+ common parameters"))
    // A data endpoint takes the header; "+ common parameters" adds the common query parameters
    // (`resolveUrl` has "only `url` and the header").
    return [
      {
        ...endpoint,
        operationId: endpoint.operationId,
        params: [...own, ...(withCommon ? commonQuery : []), ...header]
      }
    ]
  })
  const errors = tableOf(sectionOf(text, "## Errors")).map((row) => ({
    code: row.Code!,
    status: Number(row.HTTP)
  }))
  const commonResponses = tableOf(sectionOf(text, "### Common responses of data endpoints"))
    .filter((row) => /^\d+$/.test(row.Status!) && row.Status !== "200")
    .map((row) => ({ status: row.Status!, codes: spans(row.Codes!) }))
  const rule7 = text.match(/Over MCP the same mounts add (.+?) when the bearer is a management token/)
  assert.isNotNull(rule7, "the contract names the management tools (rule 7)")
  const managementTools = rule7![1]!.split(/,\s*|\s+and\s+/).map((name) => name.trim())
  return { endpoints, operations, commonQuery, header, errors, commonResponses, managementTools }
}

// ---------------------------------------------------------------------------------------------
// What decisions.md adds, encoded here: each entry is checked against decisions.md's text, and
// every row of its table must be here, so an allowance exists only where a decision states it.

/** decisions.md, "Operations beyond the seven documented data calls" (its table, row by row). */
const decidedOperations: Readonly<
  Record<string, { readonly path: string; readonly params: ReadonlyArray<string>; readonly common: boolean }>
> = {
  getCommunityPosts: {
    path: "/v1/forum/communities/posts",
    params: ["community_name", "sort", "range", "cursor"],
    common: true
  },
  getForumUser: { path: "/v1/forum/users", params: ["username", "sections"], common: true },
  getForumPosts: {
    path: "/v1/forum/posts",
    params: ["ids", "thread", "comment_limit", "comment_sort"],
    common: true
  },
  resolveForumUrl: { path: "/v1/forum/resolve-url", params: ["url"], common: false },
  microblogSearch: { path: "/v1/microblog/search", params: ["query", "sort", "cursor"], common: true },
  getMicroblogProfile: { path: "/v1/microblog/profiles", params: ["identifier"], common: true },
  getTweets: {
    path: "/v1/microblog/tweets",
    params: ["identifier", "include_replies", "cursor"],
    common: true
  },
  getTweet: { path: "/v1/microblog/tweet", params: ["id"], common: true },
  resolveMicroblogUrl: { path: "/v1/microblog/resolve-url", params: ["url"], common: false },
  getTweetReplies: { path: "/v1/microblog/tweet/replies", params: ["id", "sort", "cursor"], common: true }
}

/**
 * Headers a data call may also document, each decided in decisions.md: `Prefer: receipt-signature`
 * ("Verifiable receipts") and `PAYMENT-SIGNATURE` ("the x402 rail"). Allowed, not required.
 */
const decidedHeaders = [
  { name: "prefer", decided: "`Prefer: receipt-signature`" },
  { name: "payment-signature", decided: "`PAYMENT-SIGNATURE`" }
] as const

/**
 * Tools only a delegating spend key sees, decided in "Spend control (wave 3)" and made the owner's
 * explicit grant in "Back to the contract where wave 3 strayed": the child-key tools.
 */
const decidedSpendTools = ["create_child_key", "list_child_keys", "revoke_child_key"] as const

const checkDecisions = (decisions: string) => {
  const rows = tableOf(sectionOf(decisions, "## Operations beyond the seven documented data calls"))
  assert.sameMembers(
    rows.map((row) => row.operationId!),
    Object.keys(decidedOperations),
    "every operation decisions.md adds is encoded here, and no other"
  )
  for (const row of rows) {
    const decided = decidedOperations[row.operationId!]!
    assert.deepStrictEqual(spans(row.Path!), [`GET ${decided.path}`], row.operationId)
    const named = new Set(spans(row.Parameters!))
    for (const param of decided.params) assert.isTrue(named.has(param), `${row.operationId} names ${param}`)
    // "`url` (only, like resolveUrl)": no common parameters; every other row takes them.
    assert.strictEqual(!/\(only[,)]/.test(row.Parameters!), decided.common, row.operationId)
  }
  const prose = decisions.replace(/\s+/g, " ")
  assert.include(prose, "same common parameters")
  for (const header of decidedHeaders) assert.include(prose, header.decided)
  for (const tool of decidedSpendTools) assert.include(prose, `\`${tool}\``)
}

// ---------------------------------------------------------------------------------------------
// What the service serves

type Json = Record<string, any>

const servedParameters = (operation: Json): ReadonlyArray<Json> =>
  ((operation.parameters ?? []) as ReadonlyArray<Json>).filter((parameter) => parameter.in !== "path")

const parameterKey = (parameter: { readonly in: string; readonly name: string }) =>
  `${parameter.in}:${parameter.in === "header" ? parameter.name.toLowerCase() : parameter.name}`

/** The code of each problem schema (`#/components/schemas/ProblemNotFound` → NOT_FOUND). */
const problemCodes = (spec: Json): ReadonlyMap<string, string> =>
  new Map(
    Object.entries(spec.components.schemas as Json).flatMap(([name, schema]) => {
      const code = (schema as Json).properties?.code?.enum
      return Array.isArray(code) && code.length === 1 && name.startsWith("Problem")
        ? [[`#/components/schemas/${name}`, code[0] as string]]
        : []
    })
  )

/** The codes an operation documents, by status. */
const codesByStatus = (
  operation: Json,
  codes: ReadonlyMap<string, string>
): ReadonlyMap<string, Set<string>> =>
  new Map(
    Object.entries(operation.responses as Json).map(([status, response]) => {
      const schema = (response as Json).content?.["application/problem+json"]?.schema as Json | undefined
      const refs = (schema?.anyOf ?? (schema === undefined ? [] : [schema])) as ReadonlyArray<Json>
      return [status, new Set(refs.flatMap((ref) => (codes.has(ref.$ref) ? [codes.get(ref.$ref)!] : [])))]
    })
  )

/** The bounds and enum a contract Type cell states ("integer, 0 to 9007199254740991", "string, length 8 to 128"). */
const statedSchema = (type: string): Json => {
  const range = type.match(/(\d+) to (\d+)/)
  const stated: Json = {}
  if (range !== null) {
    const [low, high] = [Number(range[1]), Number(range[2])]
    if (type.includes("length")) Object.assign(stated, { minLength: low, maxLength: high })
    else Object.assign(stated, { minimum: low, maximum: high })
  }
  if (type.includes("enum")) stated.enum = spans(type)
  return stated
}

const freshIp = ipSequence("10.66")

// The title says why when the suite is skipped: vitest prints no console output of skipped tests.
const title =
  absent.length > 0 && !inCi
    ? `the contract pinned: skipped, ${absent.join(", ")} not found (CI fails instead)`
    : `the contract pinned (${storeName})`

describe.skipIf(absent.length > 0 && !inCi)(title, () => {
  const read = (file: string) => {
    assert.isTrue(existsSync(file), `${file} is present (CI clones shared/ beside the repository)`)
    return readFileSync(file, "utf8")
  }

  layer(testApp(operations), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("the endpoint table: every method, path and operationId is served as written", () =>
      Effect.gen(function* () {
        const contract = readContract(read(specPath))
        checkDecisions(read(decisionsPath))
        const app = yield* TestApp
        const spec = (yield* app.call("/v1/openapi.json")).body as Json
        assert.isAtLeast(contract.endpoints.length, 18)
        for (const endpoint of contract.endpoints) {
          const served = spec.paths[endpoint.path]?.[endpoint.method.toLowerCase()] as Json | undefined
          assert.isDefined(served, `${endpoint.method} ${endpoint.path} is served`)
          if (endpoint.operationId !== undefined)
            assert.strictEqual(
              served!.operationId,
              endpoint.operationId,
              `${endpoint.method} ${endpoint.path}`
            )
        }
        for (const [id, decided] of Object.entries(decidedOperations))
          assert.strictEqual(spec.paths[decided.path]?.get?.operationId, id, decided.path)
        // Every data route the service serves is the contract's or a decided one.
        const known = new Set([
          ...contract.operations.map((operation) => operation.operationId),
          ...Object.keys(decidedOperations)
        ])
        for (const [route, item] of Object.entries(spec.paths as Json))
          if (/^\/v1\/(profnet|forum|microblog)\//.test(route))
            for (const operation of Object.values(item as Json))
              assert.isTrue(
                known.has((operation as Json).operationId),
                `${route} is in the contract or decisions.md`
              )
      })
    )

    it.effect("each operation's parameters: the contract's (or decisions.md's), no more, no fewer", () =>
      Effect.gen(function* () {
        const contract = readContract(read(specPath))
        const app = yield* TestApp
        const spec = (yield* app.call("/v1/openapi.json")).body as Json
        const optionalHeaders = new Set<string>(decidedHeaders.map((header) => `header:${header.name}`))
        const expected: ReadonlyArray<readonly [string, string, ReadonlyArray<Parameter>]> = [
          ...contract.operations.map(
            (operation) => [operation.operationId, operation.path, operation.params ?? []] as const
          ),
          ...Object.entries(decidedOperations).map(
            ([id, decided]) =>
              [
                id,
                decided.path,
                [
                  ...decided.params.map(
                    (name): Parameter => ({ name, in: "query", required: undefined, type: "" })
                  ),
                  ...(decided.common ? contract.commonQuery : []),
                  ...contract.header
                ]
              ] as const
          )
        ]
        assert.isTrue(
          contract.operations.some((operation) => operation.operationId === "resolveUrl" && operation.params),
          "the contract's resolveUrl section was read"
        )
        for (const [id, route, params] of expected) {
          const operation = Object.values(spec.paths[route] as Json).find(
            (op: Json) => op.operationId === id
          ) as Json
          const served = new Map(servedParameters(operation).map((p) => [parameterKey(p as never), p]))
          const wanted = new Set(params.map(parameterKey))
          const extra = [...served.keys()].filter((key) => !wanted.has(key) && !optionalHeaders.has(key))
          const missing = [...wanted].filter((key) => !served.has(key))
          assert.deepStrictEqual({ extra, missing }, { extra: [], missing: [] }, id)
          for (const parameter of params) {
            const mine = served.get(parameterKey(parameter))!
            if (parameter.required !== undefined)
              assert.strictEqual(
                mine.required === true,
                parameter.required,
                `${id} ${parameter.name} required`
              )
            const schema = mine.schema as Json
            for (const [bound, value] of Object.entries(statedSchema(parameter.type)))
              if (bound === "enum")
                assert.sameMembers(schema.enum ?? schema.items?.enum, value, `${id} ${parameter.name}`)
              else assert.strictEqual(schema[bound], value, `${id} ${parameter.name} ${bound}`)
          }
        }
      })
    )

    it.effect(
      "the error table: each code under its status, everywhere; data operations answer every common code",
      () =>
        Effect.gen(function* () {
          const contract = readContract(read(specPath))
          const app = yield* TestApp
          const spec = (yield* app.call("/v1/openapi.json")).body as Json
          const codes = problemCodes(spec)
          assert.strictEqual(contract.errors.length, 17)
          const statusOf = new Map(contract.errors.map((error) => [error.code, String(error.status)]))
          // The service's own catalogue (what REST and MCP answer with) is the table.
          assert.sameMembers(Object.keys(errorCatalog), [...statusOf.keys()])
          for (const [code, spec] of Object.entries(errorCatalog))
            assert.strictEqual(String(spec.status), statusOf.get(code), code)
          const documented = new Set<string>()
          for (const [route, item] of Object.entries(spec.paths as Json))
            for (const operation of Object.values(item as Json))
              for (const [status, found] of codesByStatus(operation as Json, codes))
                for (const code of found) {
                  documented.add(code)
                  assert.strictEqual(
                    status,
                    statusOf.get(code),
                    `${(operation as Json).operationId} (${route}) ${code}`
                  )
                }
          assert.sameMembers([...documented], [...statusOf.keys()], "every code is documented somewhere")
          const dataIds = [
            ...contract.operations.filter((operation) => operation.params !== undefined),
            ...Object.keys(decidedOperations).map((id) => ({ operationId: id }))
          ].map((operation) => operation.operationId)
          for (const [, item] of Object.entries(spec.paths as Json))
            for (const operation of Object.values(item as Json) as ReadonlyArray<Json>) {
              if (!dataIds.includes(operation.operationId)) continue
              const found = codesByStatus(operation, codes)
              const takesCeiling = servedParameters(operation).some((p) => p.name === "max_credits")
              for (const { status, codes: wanted } of contract.commonResponses)
                for (const code of wanted) {
                  // "quote above `max_credits`": only where the call takes `max_credits`.
                  if (code === "QUOTE_EXCEEDS_MAX_CREDITS" && !takesCeiling) continue
                  assert.isTrue(
                    found.get(status)?.has(code),
                    `${operation.operationId} documents ${status} ${code}`
                  )
                }
            }
        })
    )

    it.effect(
      "the MCP catalogue: a minted key's tools are the operationIds only; a management token adds rule 7's",
      () =>
        Effect.gen(function* () {
          const contract = readContract(read(specPath))
          const app = yield* TestApp
          const spec = (yield* app.call("/v1/openapi.json")).body as Json
          const ip = freshIp()
          const { key } = yield* app.mint(ip)
          const spending = yield* connect(`${app.url}/mcp`, { key, ip }, modes[0])
          const tools = (yield* Effect.promise(() => spending.listTools())).tools
          const names = tools.map((tool) => tool.name)
          // Every operation a key calls is a tool of the same name (get_usage included); mintKey needs no key.
          const keyed = contract.endpoints.filter(
            (endpoint) => endpoint.operationId !== undefined && endpoint.auth !== "none"
          )
          assert.includeMembers(
            keyed.map((endpoint) => endpoint.operationId),
            ["resolveUrl", "get_usage"]
          )
          const wanted = [
            ...keyed.map((endpoint) => endpoint.operationId!),
            ...Object.keys(decidedOperations)
          ]
          // A minted key is ordinary (delegation is the owner's explicit grant): data tools only.
          assert.deepStrictEqual(
            {
              missing: wanted.filter((name) => !names.includes(name)),
              extra: names.filter((name) => !wanted.includes(name))
            },
            { missing: [], extra: [] }
          )
          assert.notIncludeMembers(
            names,
            [...decidedSpendTools],
            "a minted key's catalogue has no child-key tool"
          )
          // A data tool's arguments are its REST query parameters, plus REST's header as `idempotency_key`.
          for (const tool of tools) {
            const route = Object.entries(spec.paths as Json).find(
              ([, item]) => (item as Json).get?.operationId === tool.name
            )
            if (route === undefined || !/^\/v1\/(profnet|forum|microblog)\//.test(route[0])) continue
            const query = servedParameters((route[1] as Json).get)
              .filter((parameter) => parameter.in === "query")
              .map((parameter) => parameter.name as string)
            assert.sameMembers(
              Object.keys(tool.inputSchema.properties ?? {}),
              [...query, "idempotency_key"],
              tool.name
            )
          }
          const { management_token } = yield* signIn(app, "contract-catalogue@example.com", { ip })
          const managing = yield* connect(`${app.url}/mcp`, { key: management_token, ip }, modes[0])
          const managed = (yield* Effect.promise(() => managing.listTools())).tools.map((tool) => tool.name)
          assert.strictEqual(contract.managementTools.length, 6)
          assert.includeMembers(managed, contract.managementTools)
          assert.notIncludeMembers(
            names,
            contract.managementTools,
            "a spend key's catalogue has no management tool"
          )
        }).pipe(Effect.scoped)
    )
  })
})
