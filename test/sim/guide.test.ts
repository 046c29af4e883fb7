import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"

const root = resolve(import.meta.dirname, "../..")

/** The worked example of docs/simulation.md: each `$ command` with the lines its output must hold. */
const example = () => {
  const doc = readFileSync(resolve(root, "docs/simulation.md"), "utf8")
  const section = doc.split("\n## A worked example\n")[1]?.split("\n## ")[0]
  const block = section === undefined ? undefined : /```text\n([\s\S]*?)```/.exec(section)?.[1]
  if (block === undefined) throw new Error("docs/simulation.md has no text block under '## A worked example'")
  const runs: Array<{ command: string; expected: Array<string> }> = []
  for (const line of block.split("\n")) {
    if (line.startsWith("$ ")) runs.push({ command: line.slice(2), expected: [] })
    else if (line.trim() !== "") runs.at(-1)?.expected.push(line)
  }
  return runs
}

/** Wall times differ from run to run: "20.1 s" and "seconds=..." are masked on both sides. */
const masked = (text: string) =>
  text
    .replace(/\b\d+(?:\.\d+)? s\b/g, "<t> s")
    .replace(/seconds=\S+/g, "seconds=<t>")
    .replace(/ +<t> s/g, " <t> s")

describe("the worked example of docs/simulation.md", () => {
  it("runs as written: a planted bug found among two seeds, replayed with the printed command, and shrunk", () => {
    const runs = example()
    assert.strictEqual(runs.length, 2)
    const outputs = runs.map(({ command, expected }) => {
      assert.match(command, /^npm run sim -- /)
      const run = spawnSync("sh", ["-c", command], { cwd: root, encoding: "utf8", timeout: 280_000 })
      const output = `${run.stdout}${run.stderr}`
      // Both commands fail: the mutation is caught.
      assert.strictEqual(run.status, 1, output)
      const lines = new Set(masked(output).split("\n"))
      for (const line of expected)
        assert.isTrue(lines.has(masked(line)), `"${line}" is not in the output of ${command}:\n${output}`)
      return output
    })
    // The second command is the replay the first printed for its failing seed.
    assert.include(outputs[0], `replay: ${runs[1]!.command}\n`)
  }, 300_000)
})
