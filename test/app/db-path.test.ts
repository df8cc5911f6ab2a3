import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { agentDir, InvalidDatabasePath, isPostgresUrl, resolveDbPath } from "../../src/app/db-path.ts"

const root = mkdtempSync(join(tmpdir(), "pwt-dbpath-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("controller database path", () => {
  it("uses PI_WORKFLOWS_DB when it is absolute", () => {
    expect(resolveDbPath("/x", { PI_WORKFLOWS_DB: "/tmp/a.db" })).toBe("/tmp/a.db")
  })

  it("selects PostgreSQL for a postgres:// or postgresql:// URL, passed through unchanged", () => {
    for (const url of [
      "postgres://u@db.example/pw",
      "postgresql://u:secret@10.0.0.5:5432/pw?sslmode=require"
    ]) {
      expect(resolveDbPath("/x", { PI_WORKFLOWS_DB: url })).toBe(url)
      expect(isPostgresUrl(url)).toBe(true)
    }
    // Anything else is a SQLite path, checked as one.
    expect(isPostgresUrl("/tmp/postgres.db")).toBe(false)
    expect(() => resolveDbPath("/x", { PI_WORKFLOWS_DB: "mysql://u@h/db" })).toThrow(InvalidDatabasePath)
  })

  it("rejects a relative PI_WORKFLOWS_DB with a clear error", () => {
    expect(() => resolveDbPath("/x", { PI_WORKFLOWS_DB: "a.db" })).toThrow(InvalidDatabasePath)
    expect(() => resolveDbPath("/x", { PI_WORKFLOWS_DB: "a.db" })).toThrow(/absolute/)
  })

  it("defaults to a per-project file under PI_CODING_AGENT_DIR", () => {
    const project = join(root, "my project")
    mkdirSync(project)
    const path = resolveDbPath(project, { PI_CODING_AGENT_DIR: join(root, "agent") })
    expect(path.startsWith(join(root, "agent", "pi-workflow-turns"))).toBe(true)
    expect(path).toMatch(/my_project-[0-9a-f]{16}\.db$/)
  })

  it("keys the default by the project's real path", () => {
    const real = join(root, "real")
    mkdirSync(real)
    symlinkSync(real, join(root, "link"))
    const env = { PI_CODING_AGENT_DIR: join(root, "agent") }
    expect(resolveDbPath(join(root, "link"), env)).toBe(resolveDbPath(real, env))
    expect(resolveDbPath(real, env)).not.toBe(resolveDbPath(root, env))
  })

  it("falls back to ~/.pi/agent", () => {
    expect(agentDir({ HOME: "/home/u" })).toBe("/home/u/.pi/agent")
  })
})
