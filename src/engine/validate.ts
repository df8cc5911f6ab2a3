/**
 * What the engine accepts. Load-time validation: an untyped definition object (from a
 * `.workflow.mjs` module or code) becomes a `LoadedWorkflow`, or a `DefinitionError` naming the
 * workflow, the node and the problem. Everything the runner relies on is checked here, so a
 * loaded workflow cannot fail for a structural reason mid-run.
 *
 * And the JSON data rules for workflow input and node outputs: plain JSON values only (so they
 * survive a round trip through the store unchanged), bounded in size, compared canonically.
 */
import { Effect, Either, Schema } from "effect"
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeep } from "../domain/text.ts"
import {
  type AgentNode,
  type ComputeNode,
  DEFAULT_MAX_STEPS,
  type Edge,
  type JsonCheck,
  parseExpression,
  type Route,
  type WaitNode,
  type WorkflowDefinition
} from "./definition.ts"
import { exampleOf, readableIssues } from "../domain/errors.ts"
import { DefinitionError } from "./errors.ts"
import { normalizeTimeout, type TimeoutSpec } from "./timeout.ts"

export type LoadedNode =
  | {
      readonly type: "agent"
      readonly id: string
      readonly prompt: AgentNode["prompt"]
      readonly output: Check | null
      readonly timeout: TimeoutSpec
    }
  | {
      readonly type: "compute"
      readonly id: string
      readonly run: ComputeNode["run"]
      readonly timeout: TimeoutSpec
    }
  | {
      readonly type: "wait"
      readonly id: string
      readonly prompt: WaitNode["prompt"]
      readonly timeout: TimeoutSpec
    }

export interface LoadedWorkflow {
  readonly name: string
  readonly revision: number | null
  readonly description: string | null
  readonly startAt: string
  readonly maxSteps: number
  readonly input: Check | null
  /** An input the workflow's input schema accepts (required fields only), for error replies. */
  readonly inputExample: unknown
  readonly presentation: NonNullable<WorkflowDefinition["presentation"]> | null
  readonly nodes: ReadonlyMap<string, LoadedNode>
  /** The outgoing edge of each node that has one. */
  readonly routes: ReadonlyMap<string, Route>
  readonly edges: ReadonlyArray<Edge>
  /** The object as the author wrote it (fingerprints read its functions). */
  readonly definition: WorkflowDefinition
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const NODE_ID = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/
const TOP_KEYS = new Set([
  "name",
  "revision",
  "description",
  "startAt",
  "maxSteps",
  "input",
  "nodes",
  "edges",
  "presentation"
])
const NODE_KEYS = {
  agent: new Set(["type", "prompt", "output", "timeoutMs", "description"]),
  compute: new Set(["type", "run", "timeoutMs", "description"]),
  wait: new Set(["type", "prompt", "timeoutMs", "description"])
}

// Plain fields (no parameter properties) keep this module loadable with Node's type stripping.
class Problem {
  readonly node: string | null
  readonly problem: string
  constructor(node: string | null, problem: string) {
    this.node = node
    this.problem = problem
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isCheck = (value: unknown) => typeof value === "function" || Schema.isSchema(value)

const unknownKey = (value: Record<string, unknown>, allowed: ReadonlySet<string>): string | undefined =>
  Object.keys(value).find((key) => !allowed.has(key))

/** Edit distance, for "did you mean" on short field names. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** `unknown field "timeout" on an agent node; did you mean "timeoutMs"?` */
const unknownField = (extra: string, allowed: ReadonlySet<string>, where: string): string => {
  const lower = extra.toLowerCase()
  const close = [...allowed].find(
    (key) =>
      key.toLowerCase().startsWith(lower) ||
      lower.startsWith(key.toLowerCase()) ||
      distance(lower, key.toLowerCase()) <= 2
  )
  return `unknown field "${extra}"${where}${close === undefined ? "" : `; did you mean "${close}"?`}`
}

const loadNode = (id: string, value: unknown): LoadedNode => {
  if (!NODE_ID.test(id)) {
    throw new Problem(id, "node IDs start with a letter or _ and use letters, digits, _ and - (max 128)")
  }
  if (!isRecord(value)) throw new Problem(id, "a node must be an object")
  if (value.type !== "agent" && value.type !== "compute" && value.type !== "wait") {
    throw new Problem(
      id,
      `type must be "agent", "compute" or "wait", got ${JSON.stringify(value.type) ?? "nothing"}`
    )
  }
  const extra = unknownKey(value, NODE_KEYS[value.type])
  if (extra !== undefined) {
    const article = value.type === "agent" ? "an" : "a"
    throw new Problem(id, unknownField(extra, NODE_KEYS[value.type], ` on ${article} ${value.type} node`))
  }
  if (value.description !== undefined && typeof value.description !== "string") {
    throw new Problem(id, "description must be a string")
  }
  const timeout = Either.getOrElse(normalizeTimeout(value.timeoutMs), (problem) => {
    throw new Problem(id, problem)
  })
  if (value.type === "compute") {
    if (typeof value.run !== "function") throw new Problem(id, "a compute node needs a run function")
    return { type: "compute", id, run: value.run as ComputeNode["run"], timeout }
  }
  const prompt = value.prompt
  if (!(typeof prompt === "function" || (typeof prompt === "string" && prompt.trim().length > 0))) {
    throw new Problem(
      id,
      `${value.type === "wait" ? "a wait" : "an agent"} node needs a prompt: a non-empty string or a function of the context`
    )
  }
  if (value.type === "wait") return { type: "wait", id, prompt: prompt as WaitNode["prompt"], timeout }
  if (value.output !== undefined && !isCheck(value.output)) {
    throw new Problem(id, "output must be a function returning true or a problem, or an Effect Schema")
  }
  return {
    type: "agent",
    id,
    prompt: prompt as AgentNode["prompt"],
    output:
      value.output === undefined ? null : toCheck(value.output as AgentNode["output"] & {}, "the output"),
    timeout
  }
}

const target = (nodes: ReadonlyMap<string, LoadedNode>, from: string, to: unknown, what: string): string => {
  if (typeof to !== "string" || !nodes.has(to)) {
    throw new Problem(from, `${what} targets unknown node ${JSON.stringify(to) ?? "nothing"}`)
  }
  return to
}

const loadEdge = (nodes: ReadonlyMap<string, LoadedNode>, value: unknown, index: number): [string, Route] => {
  if (!isRecord(value)) throw new Problem(null, `edge ${index} must be an object`)
  const from = value.from
  if (typeof from !== "string" || !nodes.has(from)) {
    throw new Problem(null, `edge ${index} starts at unknown node ${JSON.stringify(from) ?? "nothing"}`)
  }
  const edgeKeys = new Set(["from", "to", "switch"])
  const extra = unknownKey(value, edgeKeys)
  if (extra !== undefined) throw new Problem(from, unknownField(extra, edgeKeys, " on its edge"))
  if ((value.to === undefined) === (value.switch === undefined)) {
    throw new Problem(from, 'an edge needs exactly one of "to" and "switch"')
  }
  if (value.to !== undefined) return [from, { _tag: "To", to: target(nodes, from, value.to, "edge") }]
  const spec = value.switch
  if (!isRecord(spec)) throw new Problem(from, "switch must be an object { on, cases, default? }")
  const switchKeys = new Set(["on", "cases", "default"])
  const extraSwitch = unknownKey(spec, switchKeys)
  if (extraSwitch !== undefined)
    throw new Problem(from, unknownField(extraSwitch, switchKeys, " on its switch"))
  if (typeof spec.on !== "string") throw new Problem(from, 'switch needs an "on" expression')
  const on = Either.getOrElse(parseExpression(spec.on), (problem) => {
    throw new Problem(from, problem)
  })
  if (!isRecord(spec.cases) || Object.keys(spec.cases).length === 0) {
    throw new Problem(from, "switch needs at least one case")
  }
  const cases: Record<string, string> = {}
  for (const [key, to] of Object.entries(spec.cases)) cases[key] = target(nodes, from, to, `case "${key}"`)
  const fallback = spec.default === undefined ? null : target(nodes, from, spec.default, "default")
  return [from, { _tag: "Switch", on, cases, fallback }]
}

const targets = (route: Route): ReadonlyArray<string> =>
  route._tag === "To"
    ? [route.to]
    : [...Object.values(route.cases), ...(route.fallback === null ? [] : [route.fallback])]

const load = (value: unknown): LoadedWorkflow => {
  if (!isRecord(value)) throw new Problem(null, "a workflow definition must be an object")
  if (typeof value.name !== "string" || !NAME.test(value.name)) {
    throw new Problem(null, "name must start with a letter or digit and use letters, digits, . _ - (max 128)")
  }
  const extra = unknownKey(value, TOP_KEYS)
  if (extra !== undefined) throw new Problem(null, unknownField(extra, TOP_KEYS, ""))
  const { revision, maxSteps, description } = value
  if (revision !== undefined && !(Number.isSafeInteger(revision) && (revision as number) >= 0)) {
    throw new Problem(null, "revision must be a non-negative integer")
  }
  if (maxSteps !== undefined && !(Number.isSafeInteger(maxSteps) && (maxSteps as number) >= 1)) {
    throw new Problem(null, "maxSteps must be a positive integer")
  }
  if (description !== undefined && typeof description !== "string") {
    throw new Problem(null, "description must be a string")
  }
  if (value.input !== undefined && !isCheck(value.input)) {
    throw new Problem(null, "input must be a function returning true or a problem, or an Effect Schema")
  }
  if (value.presentation !== undefined && typeof value.presentation !== "function") {
    throw new Problem(null, "presentation must be a function of the completed run")
  }
  if (!isRecord(value.nodes) || Object.keys(value.nodes).length === 0) {
    throw new Problem(null, "nodes must be an object with at least one node")
  }
  const nodes = new Map(Object.entries(value.nodes).map(([id, node]) => [id, loadNode(id, node)] as const))
  if (typeof value.startAt !== "string" || !nodes.has(value.startAt)) {
    throw new Problem(null, `startAt names unknown node ${JSON.stringify(value.startAt) ?? "nothing"}`)
  }
  if (!Array.isArray(value.edges)) throw new Problem(null, "edges must be an array")
  const routes = new Map<string, Route>()
  value.edges.forEach((edge: unknown, index) => {
    const [from, route] = loadEdge(nodes, edge, index)
    if (routes.has(from)) throw new Problem(from, "has more than one outgoing edge")
    routes.set(from, route)
  })
  const reached = new Set([value.startAt])
  const pending = [value.startAt]
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    const route = routes.get(id)
    for (const next of route === undefined ? [] : targets(route)) {
      if (!reached.has(next)) {
        reached.add(next)
        pending.push(next)
      }
    }
  }
  const unreachable = [...nodes.keys()].find((id) => !reached.has(id))
  if (unreachable !== undefined) throw new Problem(unreachable, `is unreachable from "${value.startAt}"`)
  return {
    name: value.name,
    revision: revision === undefined ? null : (revision as number),
    description: description ?? null,
    startAt: value.startAt,
    maxSteps: maxSteps === undefined ? DEFAULT_MAX_STEPS : (maxSteps as number),
    input:
      value.input === undefined
        ? null
        : toCheck(value.input as WorkflowDefinition["input"] & {}, "the input"),
    inputExample: Schema.isSchema(value.input) ? exampleOf(value.input.ast) : null,
    presentation: (value.presentation as WorkflowDefinition["presentation"]) ?? null,
    nodes,
    routes,
    edges: value.edges as ReadonlyArray<Edge>,
    definition: value as unknown as WorkflowDefinition
  }
}

/** Validate a definition object; the error names the workflow, the node and the problem. */
export const loadWorkflow = (definition: unknown): Effect.Effect<LoadedWorkflow, DefinitionError> =>
  Effect.try({
    try: () => load(definition),
    catch: (error) => {
      const name =
        typeof definition === "object" && definition !== null && "name" in definition
          ? String(definition.name)
          : "(unnamed)"
      return error instanceof Problem
        ? new DefinitionError({ workflow: name, node: error.node, problem: error.problem })
        : new DefinitionError({ workflow: name, node: null, problem: `validation failed: ${String(error)}` })
    }
  })

/** Largest serialized input or output the engine stores. */
export const MAX_JSON_BYTES = 1024 * 1024

const problemAt = (value: unknown, path: string, seen: Set<object>): string | null => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path} is not a finite number`
  if (typeof value !== "object") return `${path} is ${typeof value}, which JSON cannot hold`
  if (seen.has(value)) return `${path} is a circular reference`
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = problemAt(value[i], `${path}[${i}]`, seen)
        if (problem !== null) return problem
      }
      return null
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return `${path} is not a plain object`
    for (const [key, item] of Object.entries(value)) {
      const problem = problemAt(item, `${path}.${key}`, seen)
      if (problem !== null) return problem
    }
    return null
  } finally {
    seen.delete(value)
  }
}

/**
 * `jsonProblem` for JSON a model or a user sent (run input, step output), which must also nest at
 * most `MAX_JSON_DEPTH` levels: checked first, iteratively, so the recursive checks after it
 * (and every serialization downstream) cannot overflow the stack.
 */
export const sentJsonProblem = (value: unknown, label: string): string | null =>
  nestsDeeperThan(value, MAX_JSON_DEPTH) ? tooDeep(label) : jsonProblem(value, label)

/** Null when `value` is plain JSON within the size bound, else the first problem found. */
export const jsonProblem = (value: unknown, label = "value"): string | null => {
  const problem = problemAt(value, label, new Set())
  if (problem !== null) return problem
  const bytes = Buffer.byteLength(JSON.stringify(value), "utf8")
  return bytes > MAX_JSON_BYTES ? `${label} is ${bytes} bytes; at most ${MAX_JSON_BYTES} are allowed` : null
}

/** JSON text with object keys sorted, so equal data always gives equal text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item
  )

/** A loaded check: null when the value passes, else the problem. */
export type Check = (value: unknown) => string | null

/**
 * Turn an author's check (function or Effect Schema) into one calling convention. A schema's
 * failure is told in plain words, naming the value as `root` ("the input", "the output").
 */
export const toCheck = (check: JsonCheck, root = "the value"): Check => {
  if (Schema.isSchema(check)) {
    const decode = Schema.decodeUnknownEither(check)
    return (value) =>
      Either.match(decode(value, { errors: "all" }), {
        onLeft: (error) => readableIssues(error, root),
        onRight: () => null
      })
  }
  return (value) => {
    try {
      const verdict = check(value)
      if (verdict === true) return null
      return typeof verdict === "string" && verdict.length > 0 ? verdict : "the check rejected the value"
    } catch (error) {
      return `the check threw: ${error instanceof Error ? error.message : String(error)}`
    }
  }
}
