/**
 * `PI_WORKFLOWS_DB` names a PostgreSQL server that cannot be reached (no server behind the
 * socket directory): the session start says so in one clear error, with the password hidden,
 * tool calls answer with an error instead of crashing, and the next session start tries again.
 * No server is needed, so this runs in both projects.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { afterEach, describe, expect, it } from "vitest"
import { createSessionApp } from "../../src/extension/session-app.ts"

const dirs: Array<string> = []
const saved = process.env.PI_WORKFLOWS_DB

afterEach(() => {
  if (saved === undefined) delete process.env.PI_WORKFLOWS_DB
  else process.env.PI_WORKFLOWS_DB = saved
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "pwt-unreachable-"))
  dirs.push(dir)
  return dir
}

describe("a PostgreSQL server that cannot be reached at session start", () => {
  it("one clear error naming the server (password hidden); tools answer with an error; the next start tries again", async () => {
    const cwd = tempDir()
    const noServer = tempDir()
    process.env.PI_WORKFLOWS_DB = `postgresql://pi:secret-pw@localhost/pw?host=${encodeURIComponent(noServer)}`
    const notes: Array<{ readonly text: string; readonly level: string }> = []
    const ctx = {
      cwd,
      hasUI: true,
      ui: { notify: (text: string, level: string) => notes.push({ text, level }) },
      isIdle: () => true,
      sessionManager: { getBranch: () => [] }
    } as unknown as ExtensionContext
    const app = createSessionApp({} as unknown as ExtensionAPI)

    await app.sessionStart(ctx)
    expect(notes).toHaveLength(1)
    const [note] = notes
    expect(note?.level).toBe("error")
    expect(note?.text).toMatch(/^pi-workflow-turns could not start: /)
    expect(note?.text).toContain("cannot connect to PostgreSQL at postgresql://pi:***@localhost/pw")
    expect(note?.text).not.toContain("secret-pw")
    expect(note?.text).not.toContain("\n") // one line: no stack trace

    const reply = await app.tool({ action: "list" }, ctx)
    expect(reply.isError).toBe(true)
    expect(notes).toHaveLength(2) // the tool call tried to open again, and said so again

    await app.sessionStart(ctx)
    expect(notes).toHaveLength(3)
    await app.shutdown(ctx)
  })
})
