// Bundle the Pi extension and the library entry into dist/ with esbuild. One ESM file each
// loads in a fraction of the time of the TypeScript sources (Pi loads extensions via jiti).
// Native and host packages stay external: better-sqlite3 (a native addon), Pi's own packages
// and typebox (the host provides them).
import { build } from "esbuild"

const shared = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
  external: ["better-sqlite3", "@earendil-works/*", "typebox", "typebox/*"],
  // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __pwtRequire } from 'node:module'; const require = __pwtRequire(import.meta.url);" }
}

await build({ ...shared, entryPoints: { extension: "src/extension/index.ts", index: "src/index.ts", testing: "src/testing.ts" }, outdir: "dist" })
