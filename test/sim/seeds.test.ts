import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { defaults, parse, simulate } from "./main.ts"
import { outcomeOf, parseSeedRange, runSeeds, type SeedOutcome, seedLines, summaryLine } from "./seeds.ts"

describe("many seeds: npm run sim -- --jobs N --seeds A..B", () => {
  it("reads a range of seeds, with or without its end", () => {
    assert.deepStrictEqual(parseSeedRange("3..7"), { from: 3, to: 7 })
    assert.deepStrictEqual(parseSeedRange("12"), { from: 12, to: 12 })
    assert.deepStrictEqual(parseSeedRange("5.."), { from: 5, to: undefined })
    assert.throws(() => parseSeedRange("7..3"), /before the first/)
    assert.throws(() => parseSeedRange("a..b"), /A\.\.B/)
    assert.throws(() => parseSeedRange("-1..2"), /A\.\.B/)
  })

  it("keeps the run options for every seed and leaves out --jobs, --seeds and --budget", () => {
    const many = parse([
      "--jobs",
      "2",
      "--ops",
      "250",
      "--seeds",
      "1..20",
      "--faults",
      "crash",
      "--budget",
      "180"
    ])
    assert.deepStrictEqual(many, {
      jobs: 2,
      from: 1,
      to: 20,
      budget: 180,
      runArgs: ["--ops", "250", "--faults", "crash"]
    })
    // One seed as before; the flags that only go with --seeds are refused without it.
    const one = parse(["--seed", "9", "--ops", "100"])
    assert.isTrue(typeof one === "object" && "seed" in one && one.seed === "9" && one.ops === 100)
    assert.throws(() => parse(["--jobs", "2"]), /go with --seeds/)
    assert.throws(() => parse(["--seeds", "1..2", "--seed", "3"]), /do not go together/)
    assert.throws(() => parse(["--seeds", "4.."]), /needs --budget/)
    assert.throws(() => parse(["--seeds", "1..2", "--ops", "0"]), /positive integer/)
    assert.throws(() => parse(["--seeds", "1..2", "--faults", "meteor"]), /unknown faults meteor/)
    assert.deepStrictEqual(parse(["--seeds", "1..2"]), {
      jobs: 1,
      from: 1,
      to: 2,
      budget: undefined,
      runArgs: []
    })
  })

  it("reads a seed's report, and prints its line, its replay when it fails, and the summary", () => {
    const passed = outcomeOf(
      4,
      "time: steps 1.0 s\nsim seed=4 ops=61 steps=56 instances=3 clients=12 result=ok seconds=2.0 ops/s=30 trace=ad41491d8840e41b\n",
      0,
      2.5
    )
    assert.deepStrictEqual(passed, {
      seed: 4,
      ok: true,
      steps: 56,
      requests: 61,
      trace: "ad41491d8840e41b",
      seconds: 2.5,
      broken: []
    })
    const failed = outcomeOf(
      7,
      "FAILED at step 3 of seed 7:\n  invariant broken: one call in flight per account: x\nsim seed=7 ops=19 steps=17 result=FAILED trace=7f89ba512667d29c\n",
      1,
      1.25
    )
    assert.isFalse(failed.ok)
    assert.deepStrictEqual(failed.broken, ["invariant broken: one call in flight per account: x"])
    const crashed = outcomeOf(8, "Error: out of memory\n", 134, 0.5)
    assert.isFalse(crashed.ok)
    assert.deepStrictEqual(crashed.broken, ["no report (exit 134): Error: out of memory"])

    assert.deepStrictEqual(seedLines(passed, ["--ops", "60"]), [
      "seed    4  steps    56  requests    61  trace ad41491d8840e41b     2.5 s  pass"
    ])
    assert.deepStrictEqual(seedLines(failed, ["--ops", "60"]), [
      "seed    7  steps    17  requests    19  trace 7f89ba512667d29c     1.3 s  FAIL",
      "    invariant broken: one call in flight per account: x",
      "    replay: npm run sim -- --seed 7 --ops 60"
    ])
    const outcomes: Array<SeedOutcome> = [failed, passed, crashed]
    assert.strictEqual(
      summaryLine(outcomes, 2, 3.04),
      "seeds 4..8: 3 run, 1 passed, 2 failed (7, 8); 80 requests in 3.0 s with 2 jobs"
    )
  })

  it("runs two seeds in two child processes, each as the seed alone would run", async () => {
    const lines: Array<string> = []
    const run = await runSeeds(
      { jobs: 2, from: 1, to: 2, budget: undefined, runArgs: ["--ops", "40"] },
      (line) => lines.push(line)
    )
    assert.isTrue(run.ok, lines.join("\n"))
    assert.deepStrictEqual(run.outcomes.map((outcome) => outcome.seed).sort(), [1, 2])
    for (const outcome of run.outcomes) {
      assert.match(outcome.trace ?? "", /^[0-9a-f]{16}$/)
      assert.isAbove(outcome.requests ?? 0, 10)
    }
    assert.notStrictEqual(run.outcomes[0]!.trace, run.outcomes[1]!.trace)
    // Bit for bit: seed 1 in its child gives the trace it gives in this process.
    const alone = await Effect.runPromise(simulate({ ...defaults, seed: "1", ops: 40, shrink: false }))
    assert.strictEqual(run.outcomes.find((outcome) => outcome.seed === 1)!.trace, alone.result.trace)
    assert.match(
      lines.at(-1)!,
      /^seeds 1\.\.2: 2 run, 2 passed, 0 failed; \d+ requests in [\d.]+ s with 2 jobs$/
    )
  }, 240_000)
})
