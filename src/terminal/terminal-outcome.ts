/**
 * What a terminal run's outcome is, read from the stored run only: its reason kind, a canonical
 * form of its result or error, and its terminal fingerprint. Pure; no I/O.
 *
 * The fingerprint identifies "the same ending" across runs of one restart chain, so it leaves
 * out everything that differs between two otherwise identical runs: run IDs, attempt and request
 * IDs, timestamps. Two runs that ended the same way hash the same; a run that got further (a
 * different result or error) hashes differently.
 */
import { createHash } from "node:crypto"
import { Option } from "effect"
import type { ReasonKind } from "../store/launch-store.ts"
import { isTerminal, type RunRecord, type TerminalRunState } from "../store/run-store.ts"

/** The stored run facts a terminal outcome is computed from (a subset of `RunRecord`). */
export type TerminalRun = Pick<
  RunRecord,
  | "runId"
  | "workflowName"
  | "workflowRef"
  | "revision"
  | "input"
  | "state"
  | "result"
  | "error"
  | "end"
  | "startedAt"
  | "stepCount"
>

/** The terminal state of a run, or null while it has not ended. */
export const terminalState = (run: Pick<RunRecord, "state">): TerminalRunState | null =>
  isTerminal(run.state) ? run.state : null

/**
 * Who cancelled a cancelled run: the row's end facts (`end_by`). A cancellation whose end names
 * nobody is treated as the user's: stopping is safe.
 */
export const cancelledBy = (run: Pick<RunRecord, "state" | "end">): "agent" | "user" | null => {
  if (run.state !== "cancelled") return null
  return run.end?.by === "agent" ? "agent" : "user"
}

/** The reason kind of an ended run, from its state and stored end facts only (never its message). */
export const reasonKind = (run: Pick<RunRecord, "state" | "end">): ReasonKind | null => {
  if (terminalState(run) === null || run.end === null) return null
  switch (run.end.kind) {
    case "cancelled":
      return cancelledBy(run) === "agent" ? "agentCancelled" : "userCancelled"
    default:
      return run.end.kind
  }
}

// Volatile tokens that can appear inside stored error text and must not split fingerprints.
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
const VOLATILE: ReadonlyArray<readonly [RegExp, string]> = [
  [new RegExp(`\\b(att|req|claim|x)-${UUID}\\b`, "gi"), "<$1-id>"],
  [/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/g, "<time>"],
  [/\b\d{8}T\d{6}Z-[a-z0-9-]+-[0-9a-f]{8}\b/g, "<run-id>"]
]

/** Error or reason text without the run's own ID, attempt/request IDs and timestamps. */
export const canonicalText = (text: string, runId: string): string => {
  let out = runId.length > 0 ? text.split(runId).join("<run-id>") : text
  for (const [pattern, replacement] of VOLATILE) out = out.replace(pattern, replacement)
  return out
}

/** JSON with object keys sorted at every level, so equal values give equal text. */
export const canonicalJson = (value: unknown): string => JSON.stringify(sortKeys(value)) ?? "null"

const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) out[key] = sortKeys(Reflect.get(value, key))
    return out
  }
  return value
}

export const FINGERPRINT_PREFIX = "terminal:"

/**
 * The terminal fingerprint: SHA-256 over workflow identity and revision, the exact input, the
 * terminal state, the canonical result or error, and the canonical reason kind.
 */
export const terminalFingerprint = (run: TerminalRun): string => {
  const outcome = Option.match(run.result, {
    onNone: () => null,
    onSome: (result) => ({ result: sortKeys(result) })
  })
  const error =
    run.error === null
      ? null
      : {
          message: canonicalText(run.error.message, run.runId),
          nodeId: run.error.nodeId,
          original: run.error.original === null ? null : canonicalText(run.error.original, run.runId)
        }
  const parts = [
    run.workflowName,
    run.revision,
    sortKeys(run.input),
    run.state,
    outcome,
    error,
    reasonKind(run)
  ]
  return `${FINGERPRINT_PREFIX}${createHash("sha256").update(JSON.stringify(parts)).digest("hex")}`
}
