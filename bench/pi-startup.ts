/**
 * What the extension adds to Pi's start-up: Pi in RPC mode until its first `get_state` answer
 * (test/e2e/harness/startup.ts), without and with dist/extension.js, alternating run by run so
 * both see the same machine load. Then where the extension's share goes: the bundle's size and
 * its import time in plain Node, for the build as shipped and for a minified variant built here
 * (into node_modules/.cache, where the bundle's external imports still resolve).
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { build } from "esbuild"
import { measureStartup } from "../test/e2e/harness/startup.ts"
import { builtExtension, ROOT } from "./pi-support.ts"
import type { BenchSection } from "./section.ts"
import { median, table } from "./stats.ts"

const CACHE = join(ROOT, "node_modules", ".cache", "pwt-bench")

/** Import `file` in a fresh Node process `runs` times; the import's wall time each, ms. */
const importTimes = (file: string, runs: number): ReadonlyArray<number> =>
  Array.from({ length: runs }, () => {
    const script =
      "const t = performance.now(); await import(process.argv[1]); " +
      "process.stdout.write(String(performance.now() - t))"
    const out = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", script, pathToFileURL(file).href],
      { cwd: ROOT, encoding: "utf8" }
    )
    return Number(out)
  })

/** The extension entry bundled like scripts/build.mjs, plus `extra` esbuild options. */
const variant = async (name: string, extra: { readonly minify?: boolean }): Promise<string> => {
  mkdirSync(CACHE, { recursive: true })
  const outfile = join(CACHE, `${name}.js`)
  await build({
    entryPoints: [join(ROOT, "src", "extension", "index.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    legalComments: "none",
    logLevel: "warning",
    external: ["better-sqlite3", "@earendil-works/*", "typebox", "typebox/*"],
    banner: {
      js: "import { createRequire as __pwtRequire } from 'node:module'; const require = __pwtRequire(import.meta.url);"
    },
    ...extra
  })
  return outfile
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`

export const piStartupSection: BenchSection = {
  id: "pi-startup",
  title: "Extension start-up cost in Pi",
  run: async (context) => {
    const runs = context.quick ? 2 : 7
    const extension = builtExtension(context.log)
    const minified = await variant("extension-min", { minify: true })
    const none: Array<number> = []
    const shipped: Array<number> = []
    const small: Array<number> = []
    // One unmeasured start of each fills the OS file cache and Node's compile cache.
    await measureStartup(null, 1, { warmup: 1 })
    await measureStartup(extension, 1, { warmup: 1 })
    await measureStartup(minified, 1, { warmup: 1 })
    for (let i = 0; i < runs; i++) {
      none.push(...(await measureStartup(null, 1, { warmup: 0 })).samplesMs)
      shipped.push(...(await measureStartup(extension, 1, { warmup: 0 })).samplesMs)
      small.push(...(await measureStartup(minified, 1, { warmup: 0 })).samplesMs)
    }
    context.log("  pi-startup: started Pi")
    const importRuns = context.quick ? 3 : 7
    const imports = {
      shipped: median(importTimes(extension, importRuns)),
      minified: median(importTimes(minified, importRuns))
    }
    const base = median(none)
    const row = (label: string, samples: ReadonlyArray<number>, size: string, importMs: string) => {
      const m = median(samples)
      return [
        label,
        m.toFixed(0),
        `${Math.min(...samples).toFixed(0)}–${Math.max(...samples).toFixed(0)}`,
        samples === none ? "—" : `${(m - base).toFixed(0)} (${(m / base).toFixed(2)}×)`,
        size,
        importMs
      ]
    }
    const markdown = [
      `Pi 1.6 in RPC mode, spawn → first \`get_state\` answer, ms: median of ${runs} starts per row, taken in turn ` +
        "(none, shipped, minified) after one unmeasured start of each, each in a fresh sandbox. The import column is " +
        `the bundle's \`import()\` in a fresh plain Node process, median of ${importRuns}.`,
      "",
      table(
        ["extension", "Pi ready, median", "range", "added by the extension", "bundle", "plain-Node import"],
        [
          row("none", none, "—", "—"),
          row(
            "dist/extension.js (scripts/build.mjs)",
            shipped,
            kib(statSync(extension).size),
            `${imports.shipped.toFixed(0)} ms`
          ),
          row(
            "the same, esbuild `minify: true`",
            small,
            kib(statSync(minified).size),
            `${imports.minified.toFixed(0)} ms`
          )
        ]
      ),
      "",
      "Anchor (perf-anchors.md, same machine kind): Pi alone 192–207 ms; a minimal Effect + @effect/sql-sqlite-node " +
        "extension bundled the same way added ≈ 53 ms (700 KB); as TypeScript source ≈ 260 ms."
    ].join("\n")
    return { markdown, checks: [], goals: [] }
  }
}
