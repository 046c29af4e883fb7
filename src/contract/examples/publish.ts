import { type ErrorCode, errorCatalog, errorClasses } from "../errors.ts"
import { problemContext, toProblem } from "../problem.ts"
import type { Publication } from "../publication.ts"
import { answerExample, responseExamples } from "./index.ts"
import { problemExamples } from "./problems.ts"

type Json = Record<string, any>

/**
 * The stored examples were taken at `responseExamples.baseUrl` with its default upgrade URL; a
 * string of theirs names the published base and upgrade URLs instead.
 */
const rebase = (publication: Publication): ((node: unknown) => unknown) => {
  const stored = responseExamples.baseUrl
  const upgrade = publication.upgradeUrl
  const text = (value: string) =>
    value
      .replaceAll(`${stored}/upgrade?`, `${upgrade}${upgrade.includes("?") ? "&" : "?"}`)
      .replaceAll(`${stored}/upgrade`, upgrade)
      .replaceAll(stored, publication.baseUrl)
  const walk = (node: unknown): unknown =>
    typeof node === "string"
      ? text(node)
      : Array.isArray(node)
        ? node.map(walk)
        : node !== null && typeof node === "object"
          ? Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, walk(inner)]))
          : node
  return stored === publication.baseUrl && upgrade === `${stored}/upgrade` ? (node) => node : walk
}

/** The components/examples name of a code's problem example (its schema's name, `ProblemNotFound`). */
const problemExampleName = (code: ErrorCode) => `Problem${errorClasses[code].identifier}`

/** The schema reference a code's problem responses carry (see `problemSchemas`), back to its code. */
const codeOfProblemSchema = new Map(
  (Object.keys(errorClasses) as ReadonlyArray<ErrorCode>).map((code) => [
    `#/components/schemas/${problemExampleName(code)}`,
    code
  ])
)

/** The codes a problem response documents: one schema reference, or several under `anyOf` (one status). */
const codesOf = (schema: Json | undefined): ReadonlyArray<ErrorCode> =>
  ((schema?.anyOf as ReadonlyArray<Json> | undefined) ?? (schema === undefined ? [] : [schema])).flatMap(
    (branch) => {
      const code = codeOfProblemSchema.get(branch.$ref)
      return code === undefined ? [] : [code]
    }
  )

const mapValues = (record: Json, f: (value: any, key: string) => unknown): Json =>
  Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value, key)]))

/**
 * Every response of the document with its example: a JSON answer its stored one (the data
 * operations' are attached by `documentOperation`, the account operations' here by operation id)
 * rebased to the published URLs; a problem answer one example per code it documents, each rendered
 * once by `toProblem` for this publication under components/examples.
 */
export const withResponseExamples = (spec: Json, publication: Publication): Json => {
  const toPublished = rebase(publication)
  const stored: Json = responseExamples.account
  const documented = new Set<ErrorCode>()
  const withExample = (response: Json, status: string, operationId: string): Json => {
    const content = response.content as Json | undefined
    if (content === undefined) return response
    const json = content["application/json"] as Json | undefined
    const problem = content["application/problem+json"] as Json | undefined
    const stored200 = status === "200" ? stored[operationId] : undefined
    const answer = json?.examples ?? (stored200 === undefined ? undefined : answerExample(stored200))
    const codes = codesOf(problem?.schema)
    for (const code of codes) documented.add(code)
    const examples = Object.fromEntries(
      codes.map((code) => [code, { $ref: `#/components/examples/${problemExampleName(code)}` }])
    )
    return {
      ...response,
      content: {
        ...content,
        ...(json === undefined || answer === undefined
          ? {}
          : { "application/json": { ...json, examples: toPublished(answer) } }),
        ...(problem === undefined || codes.length === 0
          ? {}
          : { "application/problem+json": { ...problem, examples } })
      }
    }
  }
  const paths = mapValues(spec.paths, (item: Json) =>
    mapValues(item, (operation: Json) => ({
      ...operation,
      responses: mapValues(operation.responses ?? {}, (response: Json, status) =>
        withExample(response, status, operation.operationId)
      )
    }))
  )
  const context = problemContext(publication)
  const errors = problemExamples(responseExamples.account.mintKey.account_id, publication.baseUrl)
  const problems = Object.fromEntries(
    [...documented].map((code) => [
      problemExampleName(code),
      { summary: `${code}: ${errorCatalog[code].title}`, value: toProblem(errors[code], context) }
    ])
  )
  return {
    ...spec,
    paths,
    components: { ...spec.components, examples: { ...spec.components?.examples, ...problems } }
  }
}
