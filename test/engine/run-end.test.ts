/**
 * A run's end is stored as facts (`end_kind`, `end_by`, `end_node_id`, `end_attempt_id`) and every
 * decision about an ended run is made from them: rewording a message changes no reason kind, no
 * restart refusal, no chain outcome. Rows that ended before the facts existed get them from
 * schema version 3's backfill, the one place the old message markers are read. Both backends.
 */
import { describe, expect, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { Context, Effect, Either, Layer, Option } from "effect"
import { type RunRecord, RunStore, type RunStoreService } from "../../src/store/run-store.ts"
import type { RunEnd } from "../../src/store/run-end.ts"
import { terminalImmutable } from "../../src/store/run-rows.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { chainOutcome, decideRestart } from "../../src/terminal/restart-policy.ts"
import type { ReasonKind } from "../../src/store/launch-store.ts"
import { reasonKind, terminalFingerprint } from "../../src/terminal/terminal-outcome.ts"
import { sampleRun } from "../support/fixtures.ts"
import { databaseLayerAt, freshLocation, isPgLocation, pgQuery, rawRowsAt } from "../support/backend.ts"

const openStore = (location: string) =>
  Effect.map(Layer.build(RunStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(location)))), (context) =>
    Context.get(context, RunStore)
  )

/** Raw statements on a connection of their own, as an older release's file would have been shaped. */
const rawExec = (location: string, statements: ReadonlyArray<string>) =>
  isPgLocation(location)
    ? Effect.promise(async () => {
        for (const statement of statements) await pgQuery(location, statement)
      })
    : Effect.sync(() => {
        const db = new BetterSqlite(location)
        try {
          for (const statement of statements) db.exec(statement)
        } finally {
          db.close()
        }
      })

/** Back to the shape before schema version 6 on PostgreSQL (SQLite's rebuild runs again as it is). */
const beforeVersion6 = (location: string): ReadonlyArray<string> =>
  isPgLocation(location) ? ["ALTER TABLE workflow_run_events DROP COLUMN data_json"] : []

/**
 * Back to the shape before schema version 4: the snapshot in the run row, no snapshots table,
 * versions 4 and later not recorded (terminal rows' trigger off for the copy back only).
 */
const beforeVersion4 = (location: string): ReadonlyArray<string> => {
  const pg = isPgLocation(location)
  return [
    ...beforeVersion6(location),
    `ALTER TABLE workflow_runs ADD COLUMN snapshot_json TEXT${pg ? ' COLLATE "C"' : ""} NOT NULL DEFAULT ''`,
    pg
      ? "ALTER TABLE workflow_runs DISABLE TRIGGER workflow_runs_terminal_immutable"
      : "DROP TRIGGER workflow_runs_terminal_immutable",
    `UPDATE workflow_runs SET snapshot_json =
      (SELECT s.snapshot_json FROM workflow_run_snapshots s WHERE s.run_id = workflow_runs.run_id)`,
    pg ? "ALTER TABLE workflow_runs ENABLE TRIGGER workflow_runs_terminal_immutable" : terminalImmutable,
    "DROP TABLE workflow_run_snapshots",
    "DROP TABLE workflow_step_reminders",
    "DROP TABLE workflow_waits",
    "ALTER TABLE workflow_steps DROP COLUMN runner_host",
    "ALTER TABLE workflow_steps DROP COLUMN runner_pid",
    "DELETE FROM effect_sql_migrations WHERE migration_id >= 4"
  ]
}

type Ending = {
  readonly name: string
  readonly kind: ReasonKind
  readonly end: RunEnd
  /** Runs the ending on a claimed run `runId` (fence token "t") standing at node "first". */
  readonly write: (store: RunStoreService, runId: string, message: string) => Effect.Effect<unknown, unknown>
}

const at = (kind: RunEnd["kind"], by: RunEnd["by"], nodeId: string | null, attemptId: string | null) => ({
  kind,
  by,
  nodeId,
  attemptId
})

/** Every way a run ends, each with the message the engine writes for it. */
const endings = (runId: string): ReadonlyArray<Ending & { readonly message: string }> => {
  const fence = { runId, token: "t" }
  const attempt = `att-${runId}`
  const visit = (store: RunStoreService) => store.startStep(fence, { nodeId: "first", attemptId: attempt })
  const endVisit =
    (
      state: "completed" | "failed" | "timed_out" | "cancelled",
      end: RunEnd,
      extra: { readonly cancelledBy?: "agent" | "user" } = {}
    ) =>
    (store: RunStoreService, _runId: string, message: string) =>
      Effect.zipRight(
        visit(store),
        store.settle(fence, {
          attemptId: attempt,
          next: {
            _tag: "End",
            state,
            ...(state === "completed"
              ? { result: { ok: true } }
              : { error: { message, nodeId: "first", original: null } }),
            ...extra,
            end
          }
        })
      )
  return [
    {
      name: "completed",
      kind: "completed",
      message: "",
      end: at("completed", "engine", "first", attempt),
      write: endVisit("completed", at("completed", "engine", "first", attempt))
    },
    {
      name: "a failed node",
      kind: "failed",
      message: "boom",
      end: at("failed", "engine", "first", attempt),
      write: endVisit("failed", at("failed", "engine", "first", attempt))
    },
    {
      name: "a timed-out node",
      kind: "timedOut",
      message: "timed out after 5 ms",
      end: at("timedOut", "engine", "first", attempt),
      write: endVisit("timed_out", at("timedOut", "engine", "first", attempt))
    },
    {
      name: "the step budget",
      kind: "maxSteps",
      message: 'the run reached maxSteps (1) before visiting node "first"',
      end: at("maxSteps", "engine", "first", null),
      // At a step boundary: no visit in flight.
      write: (store, _runId, message) =>
        store.settle(fence, {
          next: {
            _tag: "End",
            state: "failed",
            error: { message, nodeId: "first", original: null },
            end: at("maxSteps", "engine", "first", null)
          }
        })
    },
    {
      name: "the controller",
      kind: "controllerInterrupted",
      message: "interrupted by the controller: ops",
      end: at("controllerInterrupted", "controller", "first", attempt),
      write: endVisit("failed", at("controllerInterrupted", "controller", "first", attempt))
    },
    {
      name: "a refused launch",
      kind: "launchFailed",
      message: 'workflow "demo" is no longer loaded',
      end: at("launchFailed", "engine", null, null),
      write: (store, _runId, message) =>
        store.settle(fence, {
          next: {
            _tag: "End",
            state: "failed",
            error: { message, nodeId: null, original: null },
            end: at("launchFailed", "engine", null, null)
          }
        })
    },
    {
      name: "the agent's cancel",
      kind: "agentCancelled",
      message: "cancelled by the agent",
      end: at("cancelled", "agent", "first", attempt),
      write: endVisit("cancelled", at("cancelled", "agent", "first", attempt), { cancelledBy: "agent" })
    },
    {
      name: "the user's cancel",
      kind: "userCancelled",
      message: "cancelled by the user",
      end: at("cancelled", "user", "first", attempt),
      write: endVisit("cancelled", at("cancelled", "user", "first", attempt), { cancelledBy: "user" })
    }
  ]
}

/** Arbitrary English, some of it the very wording of another ending. */
const REWORDED = [
  "the run reached maxSteps because the node said so",
  "interrupted by the controller? no: the node failed",
  "cancelled by the agent (a quote from the node's output)",
  "Etwas ist schiefgelaufen",
  ""
]

/** End one run per ending (each in a session of its own) with `message` (null: the engine's). */
const endAll = (store: RunStoreService, prefix: string, message: string | null) =>
  Effect.forEach(endings("x"), (_, index) =>
    Effect.gen(function* () {
      const runId = `${prefix}-${index}`
      const ending = endings(runId)[index]
      if (ending === undefined) throw new Error("no ending")
      yield* store.reserve(sampleRun(runId, { targetSessionId: `${prefix}-s${index}` }))
      yield* store.claim({ runId, token: "t", leaseMs: 60_000, mode: "activate" })
      yield* ending.write(store, runId, message ?? ending.message)
      const run = Option.getOrThrow(yield* store.get(runId))
      return { ending, run }
    })
  )

const restartVerdict = (run: RunRecord) => {
  const decided = decideRestart({
    run,
    lineage: null,
    sessionId: run.targetSessionId,
    loaded: { revision: run.revision, fingerprint: run.sourceFingerprint },
    restartedAs: null
  })
  return Either.isLeft(decided) ? decided.left.reason : "restartable"
}

describe("run endings as facts", () => {
  it.scoped("every ending is stored with its kind, who ended it and where; the reason kind follows", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      for (const { ending, run } of yield* endAll(store, "r", null)) {
        expect([ending.name, run.end]).toEqual([ending.name, ending.end])
        expect([ending.name, reasonKind(run)]).toEqual([ending.name, ending.kind])
      }
      // A live run has no end.
      expect((yield* store.reserve(sampleRun("live", { targetSessionId: "live" }))).end).toBeNull()
    })
  )

  it.scoped("rewording any ending's message changes no reason kind, restart verdict or chain outcome", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      const original = yield* endAll(store, "o", null)
      for (const [round, text] of REWORDED.entries()) {
        const reworded = yield* endAll(store, `w${round}`, text)
        for (const [index, { ending, run }] of reworded.entries()) {
          const before = original[index]?.run
          if (before === undefined) throw new Error("no original")
          const facts = (r: RunRecord) => [
            ending.name,
            reasonKind(r),
            restartVerdict(r),
            chainOutcome(r)?.reasonKind
          ]
          expect(facts(run)).toEqual(facts(before))
          expect(facts(run)[1]).toBe(ending.kind)
        }
        // The fingerprint hashes the error text (a different error is progress), never a kind
        // read from it: the same facts and the same text hash the same across runs.
        const again = yield* endAll(store, `v${round}`, text)
        expect(again.map(({ run }) => terminalFingerprint(run))).toEqual(
          reworded.map(({ run }) => terminalFingerprint(run))
        )
      }
    })
  )

  it.scoped("schema version 3 backfills runs that ended before it from what their rows hold", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const written = yield* Effect.scoped(
        Effect.flatMap(openStore(location), (store) => endAll(store, "b", null))
      )
      // The file as the release before version 3 left it: no end columns, version 3 not recorded.
      yield* rawExec(location, [
        ...beforeVersion4(location),
        ...["end_kind", "end_by", "end_node_id", "end_attempt_id"].map(
          (column) => `ALTER TABLE workflow_runs DROP COLUMN ${column}`
        ),
        "DELETE FROM effect_sql_migrations WHERE migration_id = 3",
        // Rows from before `cancel_requested` was kept on an ended run: only the message says who.
        ...(["agent", "user"] as const).map(
          (by) => `INSERT INTO workflow_runs (run_id, workflow_name, workflow_ref, source_fingerprint,
            snapshot_json, target_session_id, origin, input_json, state, current_node_id, max_steps, error_json,
            created_at, updated_at, ended_at)
          VALUES ('legacy-${by}', 'demo', 'demo@1', 'sha256:abc', '{}', 'legacy-${by}', 'tool', '{}', 'cancelled',
            'first', 10, '{"message":"cancelled by the ${by}","nodeId":"first","original":null}',
            '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
        )
      ])
      const store = yield* openStore(location)
      for (const { ending, run } of written) {
        const after = Option.getOrThrow(yield* store.get(run.runId))
        // The same facts the engine writes today: the node and attempt the row stood at.
        expect([ending.name, after.end]).toEqual([ending.name, ending.end])
        expect([ending.name, reasonKind(after)]).toEqual([ending.name, ending.kind])
        expect(terminalFingerprint(after)).toBe(terminalFingerprint(run))
      }
      for (const by of ["agent", "user"] as const) {
        const legacy = Option.getOrThrow(yield* store.get(`legacy-${by}`))
        expect([legacy.end, reasonKind(legacy)]).toEqual([
          { kind: "cancelled", by, nodeId: "first", attemptId: null },
          by === "agent" ? "agentCancelled" : "userCancelled"
        ])
      }
      // Ended rows are immutable again once the backfill is done.
      const refused = yield* Effect.either(
        rawExec(location, ["UPDATE workflow_runs SET end_by = 'user' WHERE run_id = 'b-0'"]).pipe(
          Effect.catchAllDefect((defect) => Effect.fail(String(defect)))
        )
      )
      expect(Either.isLeft(refused) && refused.left).toContain("terminal workflow runs are immutable")
    })
  )
})

describe("schema version 4: the definition snapshot in its own table", () => {
  it.scoped("moves every run's snapshot out of the run row, drops the old column, keeps rows immutable", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const written = yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* openStore(location)
          const ended = yield* endAll(store, "v", null)
          const queued = yield* store.reserve(
            sampleRun("v-queued", { targetSessionId: "v-sq", snapshot: { schema: "big", nodes: ["a", "b"] } })
          )
          return [...ended.map(({ run }) => run), queued]
        })
      )
      yield* rawExec(location, beforeVersion4(location))
      const store = yield* openStore(location)
      for (const run of written) {
        expect(Option.getOrThrow(yield* store.get(run.runId)).snapshot).toEqual(run.snapshot)
      }
      const moved = yield* rawRowsAt(location, "SELECT run_id FROM workflow_run_snapshots ORDER BY run_id")
      expect(moved).toEqual(
        written.map((run) => ({ run_id: run.runId })).sort((a, b) => (a.run_id < b.run_id ? -1 : 1))
      )
      const columns = yield* rawRowsAt(
        location,
        isPgLocation(location)
          ? "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'workflow_runs'"
          : "SELECT name FROM pragma_table_info('workflow_runs')"
      )
      expect(JSON.stringify(columns)).not.toContain("snapshot_json")
      const refused = (statement: string) =>
        Effect.either(
          rawExec(location, [statement]).pipe(Effect.catchAllDefect((defect) => Effect.fail(String(defect))))
        )
      const ended = yield* refused("UPDATE workflow_runs SET end_by = 'user' WHERE run_id = 'v-0'")
      expect(Either.isLeft(ended) && ended.left).toContain("terminal workflow runs are immutable")
      const snapshot = yield* refused("UPDATE workflow_run_snapshots SET snapshot_json = '{}'")
      expect(Either.isLeft(snapshot) && snapshot.left).toContain("run snapshots are immutable")
    })
  )
})
