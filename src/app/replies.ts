/** Text replies for the tool and the command: short, factual, bounded. */
import type { RunStatus, RunSummary } from "../engine/engine.ts"

export interface Reply {
  readonly text: string
  readonly isError: boolean
  readonly details: Readonly<Record<string, unknown>>
}

export const ok = (text: string, details: Readonly<Record<string, unknown>> = {}): Reply => ({
  text,
  isError: false,
  details
})

const MAX_ERROR_TEXT = 2_000

/** Every failure of a tool or command action becomes one readable line, never a stack trace. */
export const failed = (action: string, error: unknown): Reply => {
  const tag =
    typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : "Error"
  const message = error instanceof Error ? error.message : String(error)
  const text = `workflow ${action} failed (${tag}): ${message}`.slice(0, MAX_ERROR_TEXT)
  return { text, isError: true, details: { error: tag } }
}

export const describeRun = (run: RunSummary): string => {
  const parts = [`run ${run.runId}`, `workflow ${run.workflowRef}`, `state ${run.state}`]
  if (run.currentNodeId !== null) parts.push(`node ${run.currentNodeId}`)
  if (run.openRequestId !== null) parts.push(`open request ${run.openRequestId}`)
  parts.push(`steps ${run.steps}/${run.maxSteps}`)
  if (run.parkedReason !== null) parts.push(`parked: ${run.parkedReason}`)
  if (run.error !== null) parts.push(`error: ${run.error.message}`)
  return parts.join(" · ")
}

const MAX_STATUS_JSON = 16_000

/** Status as text plus bounded JSON the model can read; `extra` goes right under the summary line. */
export const describeStatus = (status: RunStatus, extra = ""): string => {
  const json = JSON.stringify(status, null, 2)
  const body = json.length <= MAX_STATUS_JSON ? json : `${json.slice(0, MAX_STATUS_JSON)}\n…[truncated]`
  return `${describeRun(status)}${extra}\n${body}`
}
