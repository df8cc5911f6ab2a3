/** Temp-dir helpers: every test database lives in its own directory, removed afterwards. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"

/** A scoped temp directory, removed when the scope closes. */
export const tempDir = (prefix = "pwt-") =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A fresh database path inside a scoped temp directory. */
export const tempDbPath = Effect.map(tempDir(), (dir) => join(dir, "controller.db"))
