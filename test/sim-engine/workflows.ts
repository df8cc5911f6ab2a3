/**
 * The workflows the engine simulation runs: every way a run can end (completed with a
 * presentation, terminal timeout, routed timeout, failure after start, two steps), as plain
 * definition objects like a user's `.workflow.mjs` files.
 */
export const STEP_TIMEOUT_MS = 5_000

export const WORKFLOWS = [
  {
    name: "greet",
    startAt: "ask",
    nodes: { ask: { type: "agent", prompt: "Say hello.", timeoutMs: null } },
    edges: [],
    presentation: () => "Greeting ready."
  },
  {
    name: "timed",
    startAt: "fix",
    nodes: { fix: { type: "agent", prompt: "Fix it.", timeoutMs: STEP_TIMEOUT_MS } },
    edges: []
  },
  {
    name: "routed",
    startAt: "review",
    nodes: {
      review: { type: "agent", prompt: "Review.", timeoutMs: STEP_TIMEOUT_MS },
      recover: { type: "agent", prompt: "Review timed out; decide now.", timeoutMs: null },
      publish: { type: "compute", run: () => ({ published: true }) }
    },
    edges: [
      { from: "review", switch: { on: "$result.outcome", cases: { ok: "publish", timed_out: "recover" } } },
      { from: "recover", to: "publish" }
    ]
  },
  {
    name: "crashy",
    startAt: "boom",
    nodes: {
      boom: {
        type: "compute",
        run: () => {
          throw new Error("metrics database unreachable")
        }
      }
    },
    edges: []
  },
  {
    name: "two",
    startAt: "a",
    nodes: {
      a: { type: "agent", prompt: "First step.", timeoutMs: null },
      b: { type: "agent", prompt: "Second step.", timeoutMs: null }
    },
    edges: [{ from: "a", to: "b" }]
  }
] as const

/**
 * Waiting checkpoints, picked only by schedules generated with `waits` (the list above and its
 * names stay as they are: every replayed seed depends on them): a step that times out into a
 * question, and a question first.
 */
export const WAIT_WORKFLOWS = [
  {
    name: "asked",
    startAt: "review",
    nodes: {
      review: { type: "agent", prompt: "Review.", timeoutMs: STEP_TIMEOUT_MS },
      ask: { type: "wait", prompt: "The review timed out. Merge anyway?" },
      merge: { type: "compute", run: () => ({ merged: true }) }
    },
    edges: [
      { from: "review", switch: { on: "$result.outcome", cases: { ok: "merge", timed_out: "ask" } } },
      { from: "ask", to: "merge" }
    ]
  },
  {
    name: "gate",
    startAt: "ask",
    nodes: {
      ask: { type: "wait", prompt: "Go ahead?", timeoutMs: 60_000 },
      go: { type: "agent", prompt: "Go ahead now.", timeoutMs: null }
    },
    edges: [{ from: "ask", to: "go" }]
  }
] as const

export type WorkflowName = (typeof WORKFLOWS)[number]["name"] | (typeof WAIT_WORKFLOWS)[number]["name"]
export const WORKFLOW_NAMES: ReadonlyArray<WorkflowName> = WORKFLOWS.map((w) => w.name)
export const WAIT_WORKFLOW_NAMES: ReadonlyArray<WorkflowName> = WAIT_WORKFLOWS.map((w) => w.name)
