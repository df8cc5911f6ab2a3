/** The executable behind package.json `bin` (built to dist/cli.js); see docs/cli.md. */
import { nodeVersionProblem } from "../node-version.ts"

// Checked before the CLI (and the native SQLite addon under it) is loaded at all.
const problem = nodeVersionProblem(process.versions.node, "the operator CLI")
if (problem !== null) {
  process.stderr.write(`pi-workflow-turns: ${problem}\n`)
  process.exitCode = 2
} else {
  const { main } = await import("./main.ts")
  process.exitCode = await main(process.argv)
}
