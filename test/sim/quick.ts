import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { formatFailure, runBatch } from "./runner.ts"
const dir = mkdtempSync(join(tmpdir(), "pwt-sim-"))
const n = Number(process.argv[2] ?? 20)
const r = await runBatch(1, n, dir)
console.log(r.runs, r.elapsedMs.toFixed(0), JSON.stringify(r.totals))
for (const f of r.failures.slice(0, 10)) console.log(formatFailure(f))
