/**
 * Where the controller database lives. `PI_WORKFLOWS_DB` wins: a `postgres://` or
 * `postgresql://` URL selects a PostgreSQL database (docs/postgres.md), anything else must be an
 * absolute SQLite file path. Otherwise one SQLite file per project under Pi's agent directory,
 * keyed by the project's real path so symlinked checkouts share one store and two projects never
 * do.
 */
import { createHash } from "node:crypto"
import { realpathSync } from "node:fs"
import { homedir } from "node:os"
import { basename, isAbsolute, join } from "node:path"

export class InvalidDatabasePath extends Error {
  override readonly name = "InvalidDatabasePath"
}

export interface DbPathEnv {
  readonly PI_WORKFLOWS_DB?: string | undefined
  readonly PI_CODING_AGENT_DIR?: string | undefined
  readonly HOME?: string | undefined
}

/** Pi's agent directory: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`. */
export const agentDir = (env: DbPathEnv): string =>
  env.PI_CODING_AGENT_DIR !== undefined && env.PI_CODING_AGENT_DIR !== ""
    ? env.PI_CODING_AGENT_DIR
    : join(env.HOME ?? homedir(), ".pi", "agent")

const realProjectPath = (cwd: string): string => {
  try {
    return realpathSync(cwd)
  } catch {
    return cwd
  }
}

/** A PostgreSQL connection URL (the scheme decides; the server checks the rest when connecting). */
export const isPostgresUrl = (value: string): boolean => /^postgres(ql)?:\/\//i.test(value)

/** The SQLite file path, or the PostgreSQL URL, of the controller database. */
export const resolveDbPath = (cwd: string, env: DbPathEnv): string => {
  const override = env.PI_WORKFLOWS_DB
  if (override !== undefined && override !== "") {
    if (isPostgresUrl(override)) return override
    if (!isAbsolute(override)) {
      throw new InvalidDatabasePath(
        `PI_WORKFLOWS_DB must be an absolute file path or a postgres:// URL, got "${override}"`
      )
    }
    return override
  }
  const project = realProjectPath(cwd)
  const key = createHash("sha256").update(project).digest("hex").slice(0, 16)
  const name = basename(project).replace(/[^A-Za-z0-9._-]/g, "_") || "root"
  return join(agentDir(env), "pi-workflow-turns", `${name}-${key}.db`)
}
