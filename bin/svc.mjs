#!/usr/bin/env node
// `svc`: runs src/clients/customer-cli/main.ts on a Node that strips TypeScript types (22.18 or later). The machine's
// own node may be older, so this file stays plain JavaScript that any node can start, and re-executes
// itself through the Node the package pins (the `node` devDependency, as npm scripts would find it).
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const main = join(root, "src", "clients", "customer-cli", "main.ts")
const [major, minor] = process.versions.node.split(".").map(Number)

if (major > 22 || (major === 22 && minor >= 18)) {
  await import(main)
} else {
  const pinned = () => {
    try {
      return join(dirname(createRequire(join(root, "package.json")).resolve("node/package.json")), "bin", "node")
    } catch {
      return undefined
    }
  }
  const node = [pinned(), join(root, "node_modules", ".bin", "node")].find((p) => p !== undefined && existsSync(p))
  if (node === undefined) {
    process.stderr.write(`svc needs Node 22.18 or later (this is ${process.version}); run npm install in ${root}.\n`)
    process.exit(1)
  }
  const run = spawnSync(node, [main, ...process.argv.slice(2)], { stdio: "inherit" })
  if (run.error) {
    process.stderr.write(`svc: could not start ${node}: ${run.error.message}\n`)
    process.exit(1)
  }
  if (run.signal) process.kill(process.pid, run.signal)
  process.exit(run.status ?? 1)
}
