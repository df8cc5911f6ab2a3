/**
 * The workflow definition as an author writes it: a plain object that a `.workflow.mjs` module
 * default-exports. Nothing here requires an import; `defineWorkflow` only adds type inference.
 */
import type { Effect, Schema } from "effect"

/** How one node visit ended. `cancelled` never routes. */
export type Outcome = "ok" | "timed_out" | "failed" | "cancelled"

/** What later nodes see of an earlier visit (the latest visit of each node). */
export interface NodeResult {
  readonly outcome: Outcome
  readonly output?: unknown
  readonly error?: string
  readonly attemptId: string
}

/** One finished visit (any outcome but `cancelled`), as its durable step record holds it. */
export interface VisitRecord extends NodeResult {
  readonly nodeId: string
}

/** The argument of prompt functions, compute functions and timeout callbacks. */
export interface StepContext {
  /** The run's JSON input. */
  readonly input: unknown
  /** Outputs of nodes that finished `ok`, by node ID. */
  readonly outputs: Readonly<Record<string, unknown>>
  readonly results: Readonly<Record<string, NodeResult>>
  /**
   * Every finished visit of the run, oldest first, rebuilt from the durable step records (so a
   * resumed run sees the same list). Lets a node count earlier visits or find the one before it.
   */
  readonly history: ReadonlyArray<VisitRecord>
  /** Aborted when the visit is cancelled, parked, timed out or loses its claim. */
  readonly signal: AbortSignal
  /**
   * Report progress to the user (never to the model): non-empty text of at most 2 KiB. Throws at
   * once on bad text; the Promise settles when the report is stored or coalesced and never
   * rejects. At most one report per run per second is stored; newer ones replace held ones.
   */
  readonly progress: (text: string) => Promise<void>
}

/** Argument of the optional `presentation` function of a completed run. */
export interface PresentationContext {
  readonly input: unknown
  readonly outputs: Readonly<Record<string, unknown>>
  readonly results: Readonly<Record<string, NodeResult>>
  /** The run's result: the output of the node that ended it. */
  readonly result: unknown
}

/**
 * Wall-clock limit of one visit. Omitted: the engine default (15 minutes). A positive finite
 * number: that many milliseconds. `null`: no elapsed-time deadline. A callback: resolved (within
 * 30 s) to one of the two.
 */
export type TimeoutMs = number | null | ((context: StepContext) => number | null | PromiseLike<number | null>)

/** A check of JSON data: a function returning `true` or a problem, or an Effect Schema. */
export type JsonCheck = ((value: unknown) => true | string) | Schema.Schema.AnyNoContext

export interface AgentNode {
  readonly type: "agent"
  readonly prompt: string | ((context: StepContext) => string | PromiseLike<string>)
  /** Validates the submitted output; a rejected submission leaves the request open. */
  readonly output?: JsonCheck
  readonly timeoutMs?: TimeoutMs
  readonly description?: string
}

export interface ComputeNode {
  readonly type: "compute"
  /** Pure: a value, a Promise or an Effect of the context. The result must be JSON. */
  readonly run: (context: StepContext) => unknown | PromiseLike<unknown> | Effect.Effect<unknown, unknown>
  readonly timeoutMs?: TimeoutMs
  readonly description?: string
}

export type WorkflowNode = AgentNode | ComputeNode

/**
 * One outgoing edge per node. A switch reads the input (`$.x`), the node's output (`$output.x`)
 * or its outcome (`$result.outcome`). Non-ok outcomes only follow a switch on `$result.outcome`
 * with an explicit case for them.
 */
export type Edge =
  | { readonly from: string; readonly to: string }
  | {
      readonly from: string
      readonly switch: {
        readonly on: string
        readonly cases: Readonly<Record<string, string>>
        /** Target for any `ok` value without a case. */
        readonly default?: string
      }
    }

export interface WorkflowDefinition {
  readonly name: string
  /** Bump it when the workflow changes incompatibly: runs of another revision refuse to resume. */
  readonly revision?: number
  readonly description?: string
  readonly startAt: string
  /** Node visits allowed per run (default 100). */
  readonly maxSteps?: number
  /** Validates the JSON input at start and again at activation. */
  readonly input?: JsonCheck
  readonly nodes: Readonly<Record<string, WorkflowNode>>
  readonly edges: ReadonlyArray<Edge>
  /** Text shown to the model when the run completes (default: the result as JSON). */
  readonly presentation?: (context: PresentationContext) => string | PromiseLike<string>
}

/** Typing help for authors; the engine accepts the same object without it. */
export const defineWorkflow = <const D extends WorkflowDefinition>(definition: D): D => definition

export const DEFAULT_MAX_STEPS = 100
