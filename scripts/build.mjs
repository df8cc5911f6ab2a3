// Build dist/: the Pi extension as a self-contained esbuild bundle, and the library entries
// (`.`, `./testing`) as per-module ESM with declarations, emitted by tsc.
//
// The library imports `effect` and `@effect/*` from the consumer's node_modules (they are peer
// dependencies): bundling them would give a downstream program a second Effect whose fibers,
// tags and schemas are not its own. It has no source maps (tsc's output is readable, and the
// tarball's 1 MB budget goes to code) and no comments (the declarations keep theirs). The
// TypeScript sources do not ship: they were a third of the packed size and only a debugger reads
// them; the extension's map names their paths in the repository.
//
// The extension is what Pi loads; Pi installs a package's dependencies but none of its peers, and
// one bundled file loads in a fraction of the time of Effect's hundreds of modules. It bundles what
// it uses of typebox and pi-ai instead of importing them: in Pi's RPC mode an extension's
// `import "typebox"` / `import "@earendil-works/pi-ai"` loads those whole packages at start-up
// (~130 ms here, docs/bench.md), while it needs only `Type` and `StringEnum`. pi-tui stays
// external (Pi has it loaded), and better-sqlite3 (a native addon) is a regular dependency.
// Its source map covers our own modules only (see ownSourcesOnly).
//
// Usage: node scripts/build.mjs [--only=extension|lib] [--outdir=DIR]
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join, resolve } from "node:path"
import { build, transformSync } from "esbuild"

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value = "true"] = arg.replace(/^--/, "").split("=")
    return [key, value]
  })
)
const only = args.get("only")
const outdir = resolve(args.get("outdir") ?? "dist")

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

const decodeVlq = (text) => {
  const values = []
  let value = 0
  let shift = 0
  for (const char of text) {
    const digit = B64.indexOf(char)
    value += (digit & 31) << shift
    if (digit & 32) {
      shift += 5
      continue
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1)
    value = 0
    shift = 0
  }
  return values
}

const encodeVlq = (values) => {
  let out = ""
  for (const v of values) {
    let rest = v < 0 ? (-v << 1) | 1 : v << 1
    do {
      let digit = rest & 31
      rest >>>= 5
      if (rest > 0) digit |= 32
      out += B64[digit]
    } while (rest > 0)
  }
  return out
}

/**
 * Keep a bundle's source map to our own modules: the mappings into node_modules (Effect) are
 * most of the map, and a stack frame inside Effect is better read in the bundle than in a map
 * to sources the user does not have. Our sources are not inlined: the map's relative paths
 * name them in the repository (`node --enable-source-maps` needs only the mappings to print
 * `src/…` frames), and the tarball stays under 1 MB.
 */
const ownSourcesOnly = (mapFile) => {
  const map = JSON.parse(readFileSync(mapFile, "utf8"))
  const keep = map.sources.map((source) => !source.includes("node_modules/"))
  const index = []
  const sources = []
  map.sources.forEach((source, i) => {
    index.push(keep[i] ? sources.length : -1)
    if (keep[i]) sources.push(source)
  })
  const names = []
  const nameIndexes = new Map()
  const nameIndex = (i) => {
    if (!nameIndexes.has(i)) {
      nameIndexes.set(i, names.length)
      names.push(map.names[i])
    }
    return nameIndexes.get(i)
  }
  // Segments are deltas from the previous one (the column from the line's start): decode to
  // absolute values, drop the foreign ones, encode again.
  const state = [0, 0, 0, 0]
  const prev = [0, 0, 0, 0]
  const lines = map.mappings.split(";").map((line) => {
    let column = 0
    let prevColumn = 0
    const out = []
    for (const segment of line.split(",")) {
      if (segment === "") continue
      const [dc = 0, ...rest] = decodeVlq(segment)
      column += dc
      if (rest.length === 0) continue
      for (let k = 0; k < rest.length; k++) state[k] += rest[k]
      const source = index[state[0]]
      if (source === -1) continue
      const abs = [source, state[1], state[2], ...(rest.length > 3 ? [nameIndex(state[3])] : [])]
      const deltas = [column - prevColumn, ...abs.map((v, k) => v - prev[k])]
      prevColumn = column
      abs.forEach((v, k) => {
        prev[k] = v
      })
      out.push(encodeVlq(deltas))
    }
    return out.join(",")
  })
  writeFileSync(
    mapFile,
    JSON.stringify({ ...map, sourcesContent: undefined, sources, names, mappings: lines.join(";") })
  )
}

const buildExtension = async () => {
  for (const stale of ["chunks", "extension.js", "extension.js.map", "cli.js", "cli.js.map"]) {
    rmSync(join(outdir, stale), { recursive: true, force: true })
  }
  // The entry (tool schema, command, renderer) is small; the session application it imports on
  // first use is its own chunk, so Pi's start-up does not evaluate Effect.
  const result = await build({
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    sourcemap: "linked",
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
    // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
    // The hashbang makes `cli.js` executable (Node accepts it at the top of any module).
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __pwtRequire } from 'node:module'; const require = __pwtRequire(import.meta.url);"
    },
    // The operator CLI (package.json `bin`, docs/cli.md) is built with the extension, so both
    // share one copy of Effect in the chunks (a global install gets dependencies, not peers).
    entryPoints: { extension: "src/extension/index.ts", cli: "src/cli/bin.ts" },
    outdir,
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    // Minified (the linked source map restores names in stack traces): the session chunk bundles
    // Effect, and the tarball stays under 1 MB.
    minify: true,
    external: ["better-sqlite3", "pg", "@earendil-works/pi-coding-agent", "@earendil-works/pi-tui"]
  })
  for (const file of Object.keys(result.metafile.outputs)) {
    if (file.endsWith(".map")) ownSourcesOnly(file)
  }
}

/** The extension's bundle and chunks: esbuild's own output, minified already. */
const bundled = (entry) => entry.startsWith("chunks") || /^(extension|cli)\.js$/.test(entry)

/**
 * The library's JavaScript without comments (a quarter of its compressed size): reprinted by
 * esbuild, still one readable module per source; pure annotations stay for bundlers.
 */
const stripComments = (file) => {
  const text = readFileSync(file, "utf8")
  const { code } = transformSync(text, {
    loader: "js",
    format: "esm",
    target: "node22",
    legalComments: "none"
  })
  writeFileSync(file, code)
}

const buildLibrary = () => {
  for (const stale of ["index.js", "index.js.map", "testing.js", "testing.js.map"]) {
    rmSync(join(outdir, stale), { force: true })
  }
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", outdir], { stdio: "inherit" })
  // tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits but not in declarations; a
  // consumer's tsc (without allowImportingTsExtensions) rejects a `.ts` specifier (TS5097).
  for (const entry of readdirSync(outdir, { recursive: true, encoding: "utf8" })) {
    if (entry.endsWith(".js") && !bundled(entry)) stripComments(join(outdir, entry))
    if (!entry.endsWith(".d.ts")) continue
    const file = join(outdir, entry)
    const text = readFileSync(file, "utf8")
    const fixed = text.replace(/(from\s+|import\()(["'])(\.{1,2}\/[^"']*)\.ts\2/g, "$1$2$3.js$2")
    if (fixed !== text) writeFileSync(file, fixed)
  }
}

if (only === undefined) rmSync(outdir, { recursive: true, force: true })
if (only !== "lib") await buildExtension()
if (only !== "extension" && only !== "cli") buildLibrary()
