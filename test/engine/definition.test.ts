import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { defineWorkflow } from "../../src/engine/definition.ts"
import {
  decodeSnapshot,
  fingerprintOf,
  layerFromDefinitions,
  make as makeRegistry,
  snapshotOf,
  WorkflowRegistry
} from "../../src/engine/registry.ts"
import { loadWorkflow } from "../../src/engine/validate.ts"
import { tempDir } from "../support/temp-db.ts"

const base = () => ({
  name: "demo",
  startAt: "a",
  nodes: {
    a: { type: "agent", prompt: "do a" },
    b: { type: "compute", run: () => 1 }
  } as Record<string, unknown>,
  edges: [{ from: "a", to: "b" }] as Array<unknown>
})

const problemOf = (definition: unknown) =>
  Effect.map(Effect.flip(loadWorkflow(definition)), (e) => ({
    node: e.node,
    problem: e.problem,
    message: e.message
  }))

describe("loadWorkflow: bad definitions are reported at load time", () => {
  const cases: Array<[string, (d: ReturnType<typeof base>) => unknown, string | null, RegExp]> = [
    ["not an object", () => 42, null, /must be an object/],
    ["a bad name", (d) => ({ ...d, name: "has space" }), null, /name must start/],
    ["an unknown top-level field", (d) => ({ ...d, steps: 3 }), null, /unknown field "steps"/],
    ["startAt naming no node", (d) => ({ ...d, startAt: "zzz" }), null, /startAt names unknown node "zzz"/],
    ["no nodes", (d) => ({ ...d, nodes: {} }), null, /at least one node/],
    ["edges not an array", (d) => ({ ...d, edges: {} }), null, /edges must be an array/],
    ["maxSteps 0", (d) => ({ ...d, maxSteps: 0 }), null, /maxSteps must be a positive integer/],
    ["a negative revision", (d) => ({ ...d, revision: -1 }), null, /revision must be a non-negative integer/],
    [
      "a node of unknown type",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "human" } } }),
      "a",
      /type must be "agent", "compute" or "wait"/
    ],
    [
      "an agent without prompt",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent" } } }),
      "a",
      /needs a prompt/
    ],
    [
      "an empty prompt",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "  " } } }),
      "a",
      /needs a prompt/
    ],
    [
      "a compute without run",
      (d) => ({ ...d, nodes: { ...d.nodes, b: { type: "compute" } } }),
      "b",
      /needs a run function/
    ],
    [
      "a misspelt node field",
      (d) => ({ ...d, nodes: { ...d.nodes, b: { type: "compute", run: () => 1, timeout: 5 } } }),
      "b",
      /unknown field "timeout" on a compute node; did you mean "timeoutMs"\?/
    ],
    [
      "a misspelt agent node field",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeout: 5 } } }),
      "a",
      /unknown field "timeout" on an agent node; did you mean "timeoutMs"\?$/
    ],
    [
      "an unknown field with nothing close to it",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", colour: "red" } } }),
      "a",
      /unknown field "colour" on an agent node$/
    ],
    [
      "a bad output check",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", output: "json" } } }),
      "a",
      /output must be/
    ],
    [
      "a bad node ID",
      (d) => ({ ...d, nodes: { ...d.nodes, $x: { type: "compute", run: () => 1 } } }),
      "$x",
      /node IDs start/
    ],
    [
      "an edge to an unknown node",
      (d) => ({ ...d, edges: [{ from: "a", to: "c" }] }),
      "a",
      /edge targets unknown node "c"/
    ],
    [
      "an edge from an unknown node",
      (d) => ({ ...d, edges: [{ from: "c", to: "b" }] }),
      null,
      /edge 0 starts at unknown node "c"/
    ],
    [
      "two outgoing edges",
      (d) => ({
        ...d,
        edges: [
          { from: "a", to: "b" },
          { from: "a", to: "a" }
        ]
      }),
      "a",
      /more than one outgoing edge/
    ],
    [
      "an edge with to and switch",
      (d) => ({ ...d, edges: [{ from: "a", to: "b", switch: {} }] }),
      "a",
      /exactly one of "to" and "switch"/
    ],
    [
      "a bad switch expression",
      (d) => ({ ...d, edges: [{ from: "a", switch: { on: "mode", cases: { x: "b" } } }] }),
      "a",
      /switch "on" must be/
    ],
    [
      "a switch without cases",
      (d) => ({ ...d, edges: [{ from: "a", switch: { on: "$.x", cases: {} } }] }),
      "a",
      /at least one case/
    ],
    [
      "a case to an unknown node",
      (d) => ({ ...d, edges: [{ from: "a", switch: { on: "$.x", cases: { y: "zz" } } }] }),
      "a",
      /case "y" targets unknown node "zz"/
    ],
    ["an unreachable node", (d) => ({ ...d, edges: [] }), "b", /is unreachable from "a"/],
    [
      "timeoutMs 0",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeoutMs: 0 } } }),
      "a",
      /timeoutMs must be a positive finite number.*got 0/
    ],
    [
      "timeoutMs negative",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeoutMs: -1 } } }),
      "a",
      /got -1/
    ],
    [
      "timeoutMs NaN",
      (d) => ({ ...d, nodes: { ...d.nodes, b: { type: "compute", run: () => 1, timeoutMs: Number.NaN } } }),
      "b",
      /got NaN/
    ],
    [
      "timeoutMs Infinity",
      (d) => ({
        ...d,
        nodes: { ...d.nodes, b: { type: "compute", run: () => 1, timeoutMs: Number.POSITIVE_INFINITY } }
      }),
      "b",
      /got Infinity/
    ],
    [
      "timeoutMs as a string",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeoutMs: "60000" } } }),
      "a",
      /the string "60000"/
    ],
    [
      "timeoutMs as an object",
      (d) => ({ ...d, nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeoutMs: { ms: 1 } } } }),
      "a",
      /got a value of type object/
    ]
  ]
  for (const [what, build, node, problem] of cases) {
    it.effect(`rejects ${what}`, () =>
      Effect.gen(function* () {
        const error = yield* problemOf(build(base()))
        expect(error.node).toBe(node)
        expect(error.problem).toMatch(problem)
        expect(error.message).toContain("workflow")
      })
    )
  }

  it.effect("the error message names the workflow, the node and the problem", () =>
    Effect.gen(function* () {
      const d = base()
      const error = yield* problemOf({
        ...d,
        nodes: { ...d.nodes, a: { type: "agent", prompt: "x", timeoutMs: 0 } }
      })
      expect(error.message).toMatch(/^workflow "demo", node "a": timeoutMs must be a positive finite number/)
    })
  )
})

describe("loadWorkflow: good definitions", () => {
  it.effect("loads a definition written with defineWorkflow, including every timeout form", () =>
    Effect.gen(function* () {
      const workflow = yield* loadWorkflow(
        defineWorkflow({
          name: "forms",
          revision: 3,
          startAt: "a",
          nodes: {
            a: { type: "agent", prompt: "x", timeoutMs: null, output: Schema.Struct({ ok: Schema.Boolean }) },
            b: { type: "compute", run: () => 1, timeoutMs: 8 * 60 * 60_000 },
            c: {
              type: "compute",
              run: () => 1,
              timeoutMs: (ctx) => ((ctx.input as { fast?: boolean }).fast ? 1_000 : null)
            },
            d: { type: "agent", prompt: (ctx) => `input: ${JSON.stringify(ctx.input)}` }
          },
          edges: [
            { from: "a", to: "b" },
            { from: "b", switch: { on: "$result.outcome", cases: { ok: "c", timed_out: "d" } } },
            { from: "c", to: "d" }
          ]
        })
      )
      expect(workflow.maxSteps).toBe(100)
      expect(workflow.revision).toBe(3)
      expect([...workflow.nodes.values()].map((n) => n.timeout._tag)).toEqual([
        "None",
        "Fixed",
        "Computed",
        "Default"
      ])
      const check = workflow.nodes.get("a")
      expect(check?.type === "agent" && check.output?.({ ok: "yes" })).toMatch(
        /ok must be a boolean \(got "yes"\)/
      )
      expect(check?.type === "agent" && check.output?.({ ok: true })).toBeNull()
    })
  )

  it.scoped("loads a .workflow.mjs module that imports nothing", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = join(dir, "hello.workflow.mjs")
      const source = `export default {
  name: "hello",
  startAt: "greet",
  nodes: {
    greet: { type: "agent", prompt: "Say hello", timeoutMs: null },
    shout: { type: "compute", run: ({ outputs }) => String(outputs.greet).toUpperCase() }
  },
  edges: [{ from: "greet", to: "shout" }]
}
`
      writeFileSync(file, source)
      const module = (yield* Effect.promise(() => import(pathToFileURL(file).href))) as { default: unknown }
      const registry = yield* makeRegistry([{ definition: module.default, source, origin: file }])
      const registered = yield* registry.get("hello")
      expect(registered.origin).toBe(file)
      expect(registered.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
      expect(snapshotOf(registered.workflow).nodes.greet).toEqual({
        type: "agent",
        prompt: "Say hello",
        timeoutMs: null
      })
    })
  )
})

describe("definition snapshots", () => {
  it.effect("write a fixed null as timeoutMs: null and omit callbacks and defaults", () =>
    Effect.gen(function* () {
      const workflow = yield* loadWorkflow({
        name: "snap",
        revision: 2,
        startAt: "a",
        nodes: {
          a: { type: "agent", prompt: "fixed null", timeoutMs: null, description: "first" },
          b: { type: "agent", prompt: () => "dynamic", timeoutMs: () => null },
          c: { type: "compute", run: () => 1, timeoutMs: 60_000 },
          d: { type: "compute", run: () => 2 }
        },
        edges: [
          { from: "a", to: "b" },
          { from: "b", switch: { on: "$result.outcome", cases: { ok: "c" }, default: "d" } },
          { from: "c", to: "d" }
        ]
      })
      const snapshot = snapshotOf(workflow)
      const text = JSON.stringify(snapshot)
      expect(text).toContain(
        '"a":{"type":"agent","description":"first","prompt":"fixed null","timeoutMs":null}'
      )
      expect(snapshot.nodes.b).toEqual({ type: "agent" })
      expect(snapshot.nodes.c).toEqual({ type: "compute", timeoutMs: 60_000 })
      expect(snapshot.nodes.d).toEqual({ type: "compute" })
      expect(snapshot).toMatchObject({
        schema: "pi-workflows.definition-snapshot.v1",
        name: "snap",
        revision: 2,
        startAt: "a",
        maxSteps: 100
      })
      expect(snapshot.edges[1]).toEqual({
        from: "b",
        switch: { on: "$result.outcome", cases: { ok: "c" }, default: "d" }
      })
      expect(text).not.toContain("=>")
      // The stored form decodes strictly.
      expect(yield* decodeSnapshot(JSON.parse(text))).toEqual(snapshot)
    })
  )

  it.effect("fingerprints change with any function body and stay stable otherwise", () =>
    Effect.gen(function* () {
      const build = (factor: number) => ({
        name: "fp",
        startAt: "a",
        nodes: { a: { type: "compute", run: factor === 1 ? () => 1 : () => 2 } },
        edges: []
      })
      const one = yield* loadWorkflow(build(1))
      const again = yield* loadWorkflow(build(1))
      const two = yield* loadWorkflow(build(2))
      expect(fingerprintOf(one)).toBe(fingerprintOf(again))
      expect(fingerprintOf(one)).not.toBe(fingerprintOf(two))
      expect(fingerprintOf(one, "text")).not.toBe(fingerprintOf(one, "text2"))
    })
  )
})

describe("WorkflowRegistry", () => {
  it.effect("a bad definition or a duplicate name fails the layer", () =>
    Effect.gen(function* () {
      const ok = { name: "one", startAt: "a", nodes: { a: { type: "compute", run: () => 1 } }, edges: [] }
      const dup = yield* Effect.flip(Layer.build(layerFromDefinitions([ok, ok])).pipe(Effect.scoped))
      expect(dup.message).toBe('workflow "one": is defined more than once')
      const bad = yield* Effect.flip(
        Layer.build(layerFromDefinitions([{ ...ok, startAt: "nope" }])).pipe(Effect.scoped)
      )
      expect(bad._tag).toBe("DefinitionError")
    })
  )

  it.effect("replaceAll swaps the whole set, or changes nothing on error", () =>
    Effect.gen(function* () {
      const one = { name: "one", startAt: "a", nodes: { a: { type: "compute", run: () => 1 } }, edges: [] }
      const registry = yield* WorkflowRegistry.pipe(Effect.provide(layerFromDefinitions([one])))
      const failed = yield* Effect.flip(registry.replaceAll([{ ...one, name: "two" }, { name: "bad" }]))
      expect(failed._tag).toBe("DefinitionError")
      expect((yield* registry.list).map((r) => r.workflow.name)).toEqual(["one"])
      yield* registry.replaceAll([{ ...one, name: "two" }])
      expect((yield* registry.list).map((r) => r.workflow.name)).toEqual(["two"])
      expect((yield* Effect.flip(registry.get("one"))).message).toBe(
        'no workflow named "one" is loaded; the loaded workflows are: two'
      )
    })
  )
})
