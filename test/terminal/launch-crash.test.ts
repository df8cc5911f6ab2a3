/**
 * Crash safety of the terminal turn's launch reservation, with real processes killed by
 * SIGKILL on a real SQLite file: the run and its launch row exist together or not at all, and
 * the repeated tool call after the crash yields exactly one successor run.
 */
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { collect, spawnNode } from "../support/node-child.ts"
import { tempDir } from "../support/temp-db.ts"

const PROBE = fileURLToPath(new URL("./launch-crash-probe.ts", import.meta.url))

const probe = (filename: string, crashAt: string, toolCallId: string, runId: string) =>
  Effect.promise(() => collect(spawnNode(PROBE, [filename, crashAt, toolCallId, runId], join(PROBE, ".."))))

const count = (filename: string) => {
  const db = new Sqlite(filename, { readonly: true })
  try {
    const runs = db.prepare("SELECT run_id FROM workflow_runs").pluck().all()
    const launches = db.prepare("SELECT run_id FROM workflow_run_launches").pluck().all()
    return { runs, launches }
  } finally {
    db.close()
  }
}

describe("launch reservation crash safety (real processes, SIGKILL)", () => {
  it.live("a crash after the run row, before commit, leaves nothing; the retried call makes one run", () =>
    Effect.gen(function* () {
      const filename = join(yield* tempDir(), "controller.db")
      const crashed = yield* probe(filename, "afterRun", "call-1", "run-2")
      expect(crashed.signal).toBe("SIGKILL")
      expect(count(filename)).toEqual({ runs: [], launches: [] })
      const retried = yield* probe(filename, "none", "call-1", "run-3")
      expect(JSON.parse(retried.stdout)).toEqual({ _tag: "Created", runId: "run-3" })
      const again = yield* probe(filename, "none", "call-1", "run-4")
      expect(JSON.parse(again.stdout)).toEqual({ _tag: "Existing", runId: "run-3", kind: "start" })
      expect(count(filename)).toEqual({ runs: ["run-3"], launches: ["run-3"] })
    }).pipe(Effect.scoped)
  )

  it.live("a crash after the commit keeps both; the retried call returns the reserved run", () =>
    Effect.gen(function* () {
      const filename = join(yield* tempDir(), "controller.db")
      const crashed = yield* probe(filename, "afterCommit", "call-1", "run-2")
      expect(crashed.signal).toBe("SIGKILL")
      expect(count(filename)).toEqual({ runs: ["run-2"], launches: ["run-2"] })
      const retried = yield* probe(filename, "none", "call-1", "run-3")
      expect(JSON.parse(retried.stdout)).toEqual({ _tag: "Existing", runId: "run-2", kind: "start" })
      const other = yield* probe(filename, "none", "call-2", "run-4")
      expect(other.code).not.toBe(0)
      expect(other.stderr).toContain("LaunchAlreadyReserved")
      expect(count(filename)).toEqual({ runs: ["run-2"], launches: ["run-2"] })
    }).pipe(Effect.scoped)
  )
})
