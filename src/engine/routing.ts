/**
 * Edge and switch evaluation: after a visit, where the run goes next. Pure; the runner applies
 * the decision durably.
 */
import { Either } from "effect"
import type { Outcome } from "./definition.ts"

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
