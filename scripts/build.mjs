// Bundle the Pi extension and the library entry into dist/ with esbuild. One ESM file each
// loads in a fraction of the time of the TypeScript sources (Pi loads extensions via jiti).
// better-sqlite3 (a native addon) and Pi's own packages stay external.
//
// The extension bundles what it uses of typebox and pi-ai instead of importing them: in Pi's
// RPC mode an extension's `import "typebox"` / `import "@earendil-works/pi-ai"` loads those whole
// packages from node_modules at start-up (~130 ms here, docs/bench.md), while the extension
// needs only `Type` and `StringEnum`, a few KiB after tree-shaking. Their schemas are plain
// JSON-schema objects, so Pi validates them the same way. pi-tui stays external: Pi has it loaded.
import { build } from "esbuild"

const shared = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
  // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __pwtRequire } from 'node:module'; const require = __pwtRequire(import.meta.url);"
  }
}

const host = ["better-sqlite3", "@earendil-works/*", "typebox", "typebox/*"]

// The extension is split: the entry (tool schema, command, renderer) is small, and the session
// application it imports on first use is its own chunk, so Pi's start-up does not evaluate Effect.
await build({
  ...shared,
  entryPoints: { extension: "src/extension/index.ts" },
  outdir: "dist",
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  external: ["better-sqlite3", "@earendil-works/pi-coding-agent", "@earendil-works/pi-tui"]
})
await build({
  ...shared,
  entryPoints: { index: "src/index.ts", testing: "src/testing.ts" },
  outdir: "dist",
  external: host
})
