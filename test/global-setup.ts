/**
 * Build dist/ before any test runs, so the real-Pi tests always load the extension entry that
 * `pi.extensions` names, built from the current sources, and the installed-package tests pack
 * the current library. The library (a tsc emit, the slow part) is rebuilt only when a source is
 * newer than its declarations.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const newest = (dir: string): number =>
  readdirSync(dir, { recursive: true, encoding: "utf8" }).reduce(
    (latest, entry) => Math.max(latest, statSync(join(dir, entry)).mtimeMs),
    0
  )

export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..")
  const declarations = join(root, "dist", "index.d.ts")
  const libraryStale =
    !existsSync(declarations) ||
    Math.max(
      newest(join(root, "src")),
      statSync(join(root, "tsconfig.build.json")).mtimeMs,
      statSync(join(root, "scripts", "build.mjs")).mtimeMs
    ) > statSync(declarations).mtimeMs
  const args = libraryStale ? [] : ["--only=extension"]
  execFileSync(process.execPath, [join(root, "scripts", "build.mjs"), ...args], {
    cwd: root,
    stdio: "inherit"
  })
}
