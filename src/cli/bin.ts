/** The executable behind package.json `bin` (built to dist/cli.js); see docs/cli.md. */
import { main } from "./main.ts"

process.exitCode = await main(process.argv)
