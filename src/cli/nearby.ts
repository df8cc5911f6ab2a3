/**
 * When this directory has no controller database: the other databases in the same folder (the
 * extension keeps one file per project there), so the operator can pick one with `--db`.
 * Bounded: at most `SHOWN` names, the rest counted.
 */
import { readdirSync } from "node:fs"
import { basename, dirname } from "node:path"

export const SHOWN = 5

/** The project name the extension put in a file name (`<project>-<16 hex>.db`), if it has that shape. */
export const projectHint = (file: string): string | null => {
  const match = /^(.+)-[0-9a-f]{16}\.db$/.exec(file)
  return match?.[1] ?? null
}

/** The `*.db` files beside `path` (not `path` itself), sorted; empty when the folder cannot be read. */
export const databasesBeside = (path: string): ReadonlyArray<string> => {
  try {
    return readdirSync(dirname(path), { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".db") && entry.name !== basename(path))
      .map((entry) => entry.name)
      .sort()
  } catch {
    return []
  }
}

/** The error line for a missing default database: where it looked and what is there instead. */
export const missingDatabase = (path: string, others: ReadonlyArray<string>): string => {
  const head = `no controller database at ${path} for this directory (Pi has not run a workflow in this project yet)`
  if (others.length === 0) return `${head}; pass --db PATH or set PI_WORKFLOWS_DB`
  const names = others.slice(0, SHOWN).map((file) => {
    const hint = projectHint(file)
    return hint === null ? file : `${file} (project ${hint})`
  })
  const rest = others.length > SHOWN ? ` and ${others.length - SHOWN} more` : ""
  const count = others.length === 1 ? "1 other database" : `${others.length} other databases`
  return `${head}; ${dirname(path)} has ${count}: ${names.join(", ")}${rest}; --db PATH picks one`
}
