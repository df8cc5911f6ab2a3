/**
 * Tab completion for `/workflow …`: the subcommands, then the loaded workflows after `start`
 * and the project's recent runs (newest first, this session's first) after the commands that
 * take a run ID. Reads only; a store that cannot answer completes nothing rather than failing.
 */
import { Effect } from "effect"
import { WorkflowRegistry } from "../engine/registry.ts"
import { PiSession } from "../session/pi-session.ts"
import { RunStore } from "../store/run-store.ts"

export interface Completion {
  /** The whole argument text after `/workflow ` once the completion is taken. */
  readonly value: string
  readonly label: string
  readonly description?: string
}

/** Subcommands and what each does, in the order people reach for them. */
export const SUBCOMMANDS: ReadonlyArray<readonly [string, string]> = [
  ["status", "a run's state and steps (default: this session's runs)"],
  ["start", "start a workflow: start <name> [json input]"],
  ["cancel", "stop a run; no model turn follows"],
  ["pause", "hold a run at its next step boundary"],
  ["resume", "continue a held or paused run"],
  ["list", "the loaded workflows"]
]

const RUN_VERBS = new Set(["status", "cancel", "pause", "resume"])
/** At most this many run IDs are offered. */
const MAX_RUNS = 20

export const commandCompletions = (prefix: string) =>
  Effect.gen(function* () {
    const words = prefix.trimStart().split(/\s+/)
    if (words.length <= 1) {
      const typed = words[0] ?? ""
      return SUBCOMMANDS.filter(([name]) => name.startsWith(typed)).map(
        ([name, description]): Completion => ({ value: `${name} `, label: name, description })
      )
    }
    if (words.length > 2) return []
    const [verb = "", typed = ""] = words
    if (verb === "start") {
      const workflows = yield* (yield* WorkflowRegistry).list
      return workflows
        .map((w) => w.workflow.name)
        .filter((name) => name.startsWith(typed))
        .sort()
        .map((name): Completion => ({ value: `start ${name} `, label: name }))
    }
    if (!RUN_VERBS.has(verb)) return []
    const sessionId = yield* (yield* PiSession).sessionId
    const runs = yield* (yield* RunStore).list({ limit: 200 })
    const mine = runs.filter((run) => run.targetSessionId === sessionId)
    const others = runs.filter((run) => run.targetSessionId !== sessionId)
    return [...mine, ...others]
      .filter((run) => run.runId.startsWith(typed))
      .slice(0, MAX_RUNS)
      .map(
        (run): Completion => ({
          value: `${verb} ${run.runId}`,
          label: run.runId,
          description: `${run.workflowName} · ${run.state}${run.targetSessionId === sessionId ? "" : " · another session"}`
        })
      )
  }).pipe(Effect.orElseSucceed((): ReadonlyArray<Completion> => []))
