/**
 * Property tests for workflow definitions: `loadWorkflow` accepts every well-formed definition
 * (random node graphs, all reachable), rejects each definition that breaks one rule with a
 * `DefinitionError` naming the workflow (and the node, when one is at fault), and never dies,
 * whatever value it is given.
 */
import { Cause, Effect, Exit, FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { loadWorkflow } from "../../src/engine/validate.ts"
import { RUNS } from "./arbitraries.ts"

const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/)
const nodeId = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_-]{0,12}$/)

const node = fc.oneof(
  fc.record(
    {
      type: fc.constant("agent"),
      prompt: fc.oneof(
        fc.string({ minLength: 1, maxLength: 30 }).filter((p) => p.trim().length > 0),
        fc.constant(() => "computed")
      ),
      timeoutMs: fc.oneof(fc.constant(null), fc.integer({ min: 1, max: 3_600_000 })),
      description: fc.string({ maxLength: 20 })
    },
    { requiredKeys: ["type", "prompt"] }
  ),
  fc.record(
    {
      type: fc.constant("compute"),
      run: fc.constant(() => ({ ok: true })),
      timeoutMs: fc.integer({ min: 1, max: 60_000 })
    },
    { requiredKeys: ["type", "run"] }
  )
)

interface Definition {
  readonly name: string
  readonly startAt: string
  readonly nodes: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly edges: ReadonlyArray<unknown>
  readonly [field: string]: unknown
}

/** A definition whose nodes form a chain (some links as switches), so every node is reachable. */
const validDefinition = fc
  .record({
    name,
    ids: fc.uniqueArray(nodeId, { minLength: 1, maxLength: 5 }),
    revision: fc.option(fc.nat(100), { nil: undefined }),
    maxSteps: fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
    switches: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 })
  })
  .chain(({ name, ids, revision, maxSteps, switches }) =>
    fc.array(node, { minLength: ids.length, maxLength: ids.length }).map((nodes) => {
      const edges = ids.slice(1).map((to, i) => {
        const from = ids[i] ?? ""
        return switches[i] === true
          ? { from, switch: { on: "$output.kind", cases: { next: to }, default: to } }
          : { from, to }
      })
      const definition: Definition = {
        name,
        startAt: ids[0] ?? "",
        nodes: Object.fromEntries(ids.map((id, i) => [id, nodes[i] ?? {}])),
        edges,
        ...(revision === undefined ? {} : { revision }),
        ...(maxSteps === undefined ? {} : { maxSteps })
      }
      return definition
    })
  )

const nodesOf = (d: Definition) => d.nodes
const firstNode = (d: Definition): string => d.startAt

/** Each entry breaks one rule; `node` is the node the error must name (null: the workflow). */
const breakers: ReadonlyArray<
  readonly [string, (d: Definition) => Readonly<Record<string, unknown>>, (d: Definition) => string | null]
> = [
  ["bad name", (d) => ({ ...d, name: "-starts with a dash" }), () => null],
  ["unknown top-level field", (d) => ({ ...d, extra: 1 }), () => null],
  ["no nodes", (d) => ({ ...d, nodes: {} }), () => null],
  ["startAt unknown", (d) => ({ ...d, startAt: "nowhere" }), () => null],
  ["edges not an array", (d) => ({ ...d, edges: {} }), () => null],
  ["negative revision", (d) => ({ ...d, revision: -1 }), () => null],
  ["zero maxSteps", (d) => ({ ...d, maxSteps: 0 }), () => null],
  ["description not a string", (d) => ({ ...d, description: 7 }), () => null],
  ["presentation not a function", (d) => ({ ...d, presentation: "text" }), () => null],
  ["input not a check", (d) => ({ ...d, input: 3 }), () => null],
  [
    "bad node id",
    (d) => ({ ...d, nodes: { ...nodesOf(d), "9lives": { type: "agent", prompt: "p" } } }),
    () => "9lives"
  ],
  [
    "unknown node type",
    (d) => ({ ...d, nodes: { ...nodesOf(d), [firstNode(d)]: { type: "shell", prompt: "p" } } }),
    firstNode
  ],
  [
    "unknown node field",
    (d) => ({ ...d, nodes: { ...nodesOf(d), [firstNode(d)]: { ...nodesOf(d)[firstNode(d)], retries: 3 } } }),
    firstNode
  ],
  [
    "blank prompt",
    (d) => ({ ...d, nodes: { ...nodesOf(d), [firstNode(d)]: { type: "agent", prompt: "   " } } }),
    firstNode
  ],
  [
    "compute without run",
    (d) => ({ ...d, nodes: { ...nodesOf(d), [firstNode(d)]: { type: "compute" } } }),
    firstNode
  ],
  [
    "bad timeout",
    (d) => ({
      ...d,
      nodes: { ...nodesOf(d), [firstNode(d)]: { type: "agent", prompt: "p", timeoutMs: -5 } }
    }),
    firstNode
  ],
  [
    "edge from an unknown node",
    (d) => ({ ...d, edges: [...d.edges, { from: "ghost", to: firstNode(d) }] }),
    () => null
  ],
  ["edge to an unknown node", (d) => ({ ...d, edges: [{ from: firstNode(d), to: "ghost" }] }), firstNode],
  [
    "edge with both to and switch",
    (d) => ({
      ...d,
      edges: [{ from: firstNode(d), to: firstNode(d), switch: { on: "$.x", cases: { a: firstNode(d) } } }]
    }),
    firstNode
  ],
  [
    "switch on a bad expression",
    (d) => ({
      ...d,
      edges: [{ from: firstNode(d), switch: { on: "output.x", cases: { a: firstNode(d) } } }]
    }),
    firstNode
  ],
  [
    "unreachable node",
    (d) => ({ ...d, nodes: { ...nodesOf(d), island: { type: "agent", prompt: "p" } } }),
    () => "island"
  ]
]

const definitionError = (value: unknown) => {
  const exit = Effect.runSyncExit(loadWorkflow(value))
  if (Exit.isSuccess(exit)) return null
  if (!Cause.isFailType(exit.cause)) throw new Error(`loadWorkflow died: ${Cause.pretty(exit.cause)}`)
  return exit.cause.error
}

describe("loadWorkflow", () => {
  it("accepts every well-formed definition", () => {
    fc.assert(
      fc.property(validDefinition, (definition) => {
        const exit = Effect.runSyncExit(loadWorkflow(definition))
        if (Exit.isFailure(exit)) throw new Error(Cause.pretty(exit.cause))
        expect(exit.value.name).toBe(definition.name)
        expect([...exit.value.nodes.keys()]).toEqual(Object.keys(nodesOf(definition)))
      }),
      { numRuns: RUNS }
    )
  })

  it("rejects a definition breaking one rule with a DefinitionError naming the workflow and node", () => {
    fc.assert(
      fc.property(
        validDefinition,
        fc.constantFrom(...breakers),
        (definition, [rule, breakIt, nodeAtFault]) => {
          const broken = breakIt(definition)
          const error = definitionError(broken)
          if (error === null) throw new Error(`accepted a definition with ${rule}`)
          expect(error._tag).toBe("DefinitionError")
          expect(error.workflow).toBe(String(broken.name))
          expect(error.problem.length).toBeGreaterThan(0)
          const node = nodeAtFault(definition)
          if (node !== null) expect(error.node).toBe(node)
        }
      ),
      { numRuns: RUNS }
    )
  })

  it("never dies, whatever it is given", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ withObjectString: true }),
          fc.tuple(validDefinition, fc.anything()).map(([d, nodes]) => ({ ...d, nodes })),
          fc.tuple(validDefinition, fc.anything()).map(([d, edges]) => ({ ...d, edges }))
        ),
        (value) => {
          const error = definitionError(value)
          if (error !== null) expect(error._tag).toBe("DefinitionError")
        }
      ),
      { numRuns: RUNS }
    )
  })
})
