/**
 * The workflow definition as an author writes it: a plain object that a `.workflow.mjs` module
 * default-exports. Nothing here requires an import; `defineWorkflow` only adds type inference.
 *
 * And what its edges mean: switch expressions parsed at load time, and after a visit the
 * decision where the run goes next. Pure; the runner applies the decision durably.
 */
import { Either, type Effect, type Schema } from "effect"

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

/**
 * A waiting checkpoint: the run asks a question and waits, holding no runner, until the model
 * (`workflow answer`) or the user (`/workflow answer`) answers it or its limit passes. Its output
 * is `{ answer }`; a limit that passes first is the outcome `timed_out`.
 */
export interface WaitNode {
  readonly type: "wait"
  readonly prompt: string | ((context: StepContext) => string | PromiseLike<string>)
  readonly timeoutMs?: TimeoutMs
  readonly description?: string
}

export type WorkflowNode = AgentNode | ComputeNode | WaitNode

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

/** A parsed switch expression: `$`, `$.a.b`, `$output`, `$output.a.b` or `$result.outcome|error`. */
export interface Expression {
  readonly text: string
  readonly source: "input" | "output" | "result"
  readonly path: ReadonlyArray<string>
}

const SEGMENT = /^(?:[A-Za-z_][A-Za-z0-9_-]*|\d+)$/

export const parseExpression = (text: string): Either.Either<Expression, string> => {
  const match = /^\$(output|result)?((?:\.[^.]+)*)$/.exec(text)
  if (match === null) {
    return Either.left(
      `switch "on" must be $.path, $output.path or $result.outcome, got ${JSON.stringify(text)}`
    )
  }
  const source = match[1] === "output" ? "output" : match[1] === "result" ? "result" : "input"
  const path = (match[2] ?? "").split(".").slice(1)
  const bad = path.find((segment) => !SEGMENT.test(segment))
  if (bad !== undefined) return Either.left(`switch "on" has an invalid path segment ${JSON.stringify(bad)}`)
  if (source === "result" && (path.length !== 1 || (path[0] !== "outcome" && path[0] !== "error"))) {
    return Either.left(
      `switch "on" can read $result.outcome or $result.error only, got ${JSON.stringify(text)}`
    )
  }
  return Either.right({ text, source, path })
}

export interface RouteInput {
  readonly input: unknown
  readonly outcome: Outcome
  readonly output: unknown
  readonly error: string | null
}

const at = (value: unknown, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>(
    (current, segment) =>
      typeof current === "object" && current !== null && Object.hasOwn(current, segment)
        ? (current as Record<string, unknown>)[segment]
        : undefined,
    value
  )

export const evaluate = (expression: Expression, route: RouteInput): unknown => {
  switch (expression.source) {
    case "input":
      return at(route.input, expression.path)
    case "output":
      return at(route.output, expression.path)
    case "result":
      return expression.path[0] === "outcome" ? route.outcome : (route.error ?? undefined)
  }
}

/** The case key of a value: scalars by their text; anything else has no case. */
export const caseKey = (value: unknown): string | null =>
  typeof value === "string"
    ? value
    : typeof value === "number" || typeof value === "boolean" || value === null
      ? String(value)
      : null

const show = (value: unknown): string => {
  if (value === undefined) return "undefined"
  const json = JSON.stringify(value)
  return json.length > 200 ? `${json.slice(0, 200)}…` : json
}

/** A loaded edge: a plain transition or a switch with a parsed expression. */
export type Route =
  | { readonly _tag: "To"; readonly to: string }
  | {
      readonly _tag: "Switch"
      readonly on: Expression
      readonly cases: Readonly<Record<string, string>>
      readonly fallback: string | null
    }

/** Where the run goes after a visit. */
export type Decision =
  | { readonly _tag: "Next"; readonly nodeId: string }
  /** `ok` with no outgoing edge: the output is the run's result. */
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Fail"; readonly message: string; readonly original: string | null }
  | { readonly _tag: "TimeOut"; readonly message: string; readonly original: string | null }
  | { readonly _tag: "Cancel" }

/**
 * Cancellation never routes. `ok` follows the edge (a switch value with no case fails the run).
 * `failed` and `timed_out` follow only a switch on `$result.outcome` with an explicit case for
 * them; otherwise the run fails or times out, keeping the node's own error.
 */
export const decide = (nodeId: string, route: Route | undefined, result: RouteInput): Decision => {
  if (result.outcome === "cancelled") return { _tag: "Cancel" }
  if (result.outcome === "ok") {
    if (route === undefined) return { _tag: "Complete" }
    if (route._tag === "To") return { _tag: "Next", nodeId: route.to }
    const value = evaluate(route.on, result)
    const key = caseKey(value)
    const target =
      (key !== null && Object.hasOwn(route.cases, key) ? route.cases[key] : undefined) ?? route.fallback
    if (target !== null) return { _tag: "Next", nodeId: target }
    return {
      _tag: "Fail",
      message: `node "${nodeId}": switch on ${route.on.text} has no case for value ${show(value)}`,
      original: null
    }
  }
  const original = result.error
  const onOutcome = route?._tag === "Switch" && route.on.source === "result" && route.on.path[0] === "outcome"
  if (onOutcome && Object.hasOwn(route.cases, result.outcome)) {
    const target = route.cases[result.outcome]
    if (target !== undefined) return { _tag: "Next", nodeId: target }
  }
  const base = result.outcome === "timed_out" ? `node "${nodeId}" timed out` : `node "${nodeId}" failed`
  const message = onOutcome
    ? `${base}; switch on $result.outcome has no case for value "${result.outcome}"`
    : original === null
      ? base
      : `${base}: ${original}`
  return result.outcome === "timed_out"
    ? { _tag: "TimeOut", message, original }
    : { _tag: "Fail", message, original }
}
