/**
 * Schedules for the engine simulation: what the model, the user, Pi, the clock, the store and
 * the operating system do, step by step. `generate(seed)` is pure, so a seed replays exactly.
 */
import { makePrng } from "../sim/prng.ts"
import { WAIT_WORKFLOW_NAMES, WORKFLOW_NAMES, type WorkflowName } from "./workflows.ts"

export type Proc = 0 | 1
export type FaultKind = "busy" | "readonly" | "throw"

export type Step =
  /** The model, in its turn, starts a workflow with the `workflow` tool (a user turn if idle). */
  | { readonly _tag: "ToolStart"; readonly proc: Proc; readonly workflow: WorkflowName }
  /** The model submits the newest step prompt it was given. */
  | { readonly _tag: "ModelSubmit"; readonly proc: Proc }
  /** The model cancels its own workflow during its turn. */
  | { readonly _tag: "ModelCancel"; readonly proc: Proc }
  /** The turn ends (`agent_settled`; aborted when something aborted it). */
  | { readonly _tag: "Settle" }
  /** The user presses Escape during the turn. */
  | { readonly _tag: "Escape" }
  | { readonly _tag: "UserCancel"; readonly proc: Proc }
  | { readonly _tag: "UserResume"; readonly proc: Proc }
  | { readonly _tag: "UserStart"; readonly proc: Proc; readonly workflow: WorkflowName }
  | { readonly _tag: "Advance"; readonly ms: number }
  /** SIGKILL: the process's fibers stop wherever they are. */
  | { readonly _tag: "Crash"; readonly proc: Proc }
  /** A new process for the slot (session start hooks run). */
  | { readonly _tag: "Start"; readonly proc: Proc }
  /** Pi shuts down: every process parks what it runs and ends. */
  | { readonly _tag: "Shutdown" }
  | { readonly _tag: "Fault"; readonly proc: Proc; readonly kind: FaultKind }
  | { readonly _tag: "Heal"; readonly proc: Proc }
  /** The newest waiting question is answered: by the model in its turn, or by the user. */
  | { readonly _tag: "Answer"; readonly proc: Proc; readonly by: "agent" | "user" }

export interface Schedule {
  readonly seed: number
  /** Both process slots start live (otherwise only slot 0). */
  readonly twoProcs: boolean
  readonly steps: ReadonlyArray<Step>
}

/**
 * `waits`: also waiting checkpoints (their workflows and answers). Without it a seed's schedule
 * is what it always was: the extra choices only exist when asked for.
 */
export const generate = (
  seed: number,
  length?: number,
  options: { readonly waits?: boolean } = {}
): Schedule => {
  const waits = options.waits === true
  const names = waits ? [...WORKFLOW_NAMES, ...WAIT_WORKFLOW_NAMES] : WORKFLOW_NAMES
  const rng = makePrng(seed)
  const twoProcs = rng.bool(0.5)
  const count = length ?? rng.int(20, 60)
  const proc = (): Proc => (rng.bool(0.75) ? 0 : 1)
  const steps: Array<Step> = []
  for (let i = 0; i < count; i++) {
    const tag = rng.weighted<Step["_tag"]>([
      ["ToolStart", 8],
      ["ModelSubmit", 10],
      ["ModelCancel", 3],
      ["Settle", 14],
      ["Escape", 1],
      ["UserCancel", 1],
      ["UserResume", 2],
      ["UserStart", 2],
      ["Advance", 9],
      ["Crash", 3],
      ["Start", 6],
      ["Shutdown", 1],
      ["Fault", 2],
      ["Heal", 3],
      ...(waits ? ([["Answer", 6]] as const) : [])
    ])
    switch (tag) {
      case "ToolStart":
      case "UserStart":
        steps.push({ _tag: tag, proc: proc(), workflow: rng.pick(names) })
        break
      case "ModelSubmit":
      case "ModelCancel":
      case "UserCancel":
      case "UserResume":
      case "Crash":
      case "Start":
      case "Heal":
        steps.push({ _tag: tag, proc: proc() })
        break
      case "Fault":
        steps.push({ _tag: tag, proc: proc(), kind: rng.pick<FaultKind>(["busy", "readonly", "throw"]) })
        break
      case "Advance":
        steps.push({ _tag: tag, ms: rng.pick([200, 1_000, 5_000, 12_000, 31_000, 65_000]) })
        break
      case "Answer":
        steps.push({ _tag: tag, proc: proc(), by: rng.bool(0.5) ? "agent" : "user" })
        break
      default:
        steps.push({ _tag: tag })
    }
  }
  return { seed, twoProcs, steps }
}

export const describeStep = (step: Step): string => {
  const parts = Object.entries(step)
    .filter(([key]) => key !== "_tag")
    .map(([key, value]) => `${key}=${String(value)}`)
  return parts.length === 0 ? step._tag : `${step._tag}(${parts.join(", ")})`
}
