/**
 * The workflow files the scenarios put in `.pi/workflows/`: plain `.workflow.mjs` modules, as a
 * user would write them.
 */

export const TRIAGE = `export default {
  name: "triage",
  description: "Label one issue",
  startAt: "label",
  nodes: {
    label: { type: "agent", prompt: "Read issue #42 and answer {\\"label\\": \\"bug\\" | \\"feature\\"}.", timeoutMs: null }
  },
  edges: []
}
`

export const NIGHTLY_REPORT = `export default {
  name: "nightly-report",
  startAt: "collect",
  nodes: {
    collect: { type: "compute", run: () => { throw new Error("metrics database unreachable (ECONNREFUSED 127.0.0.1:5432)") } },
    summarize: { type: "agent", prompt: "Summarize the metrics." }
  },
  edges: [{ from: "collect", to: "summarize" }]
}
`

// The input check passes at start and fails at activation: the world changed in between.
export const DEPLOY = `let checks = 0
export default {
  name: "deploy",
  startAt: "ship",
  input: () => (++checks === 1 ? true : "the target branch main is locked for a release freeze"),
  nodes: { ship: { type: "agent", prompt: "Ship it." } },
  edges: []
}
`

export const REVIEW = `export default {
  name: "review",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch and answer {\\"approved\\": boolean}.", timeoutMs: 500 },
    recover: {
      type: "agent",
      prompt: ({ results }) => "The review step timed out (" + results.review.error + "). Decide now: {\\"approved\\": boolean}.",
      timeoutMs: null
    },
    publish: { type: "compute", run: ({ outputs }) => ({ approved: (outputs.recover ?? outputs.review).approved }) }
  },
  edges: [
    { from: "review", switch: { on: "$result.outcome", cases: { ok: "publish", timed_out: "recover" } } },
    { from: "recover", to: "publish" }
  ],
  presentation: ({ result }) => "Review finished: " + (result.approved ? "approved" : "rejected") + "."
}
`

export const LINT = `export default {
  name: "lint",
  startAt: "fix",
  nodes: { fix: { type: "agent", prompt: "Fix the lint errors and answer {\\"fixed\\": number}.", timeoutMs: 500 } },
  edges: []
}
`

export const RELEASE_NOTES = `export default {
  name: "release-notes",
  startAt: "draft",
  input: (input) => (typeof input?.version === "string" ? true : "input needs {version: string}"),
  nodes: {
    draft: {
      type: "agent",
      prompt: ({ input }) => "Draft release notes for " + input.version + ": answer {\\"notes\\": string[]}.",
      output: (value) => (Array.isArray(value?.notes) ? true : "output must be {notes: string[]}"),
      timeoutMs: null
    },
    measure: { type: "compute", run: ({ outputs }) => ({ count: outputs.draft.notes.length }) }
  },
  edges: [{ from: "draft", to: "measure" }],
  presentation: ({ input, result }) => "Release notes for " + input.version + " are ready (" + result.count + " entries)."
}
`

export const GUARDED = `export default {
  name: "guarded",
  startAt: "work",
  input: (input) => (typeof input?.ticket === "string" ? true : "input needs {ticket: string}"),
  nodes: { work: { type: "agent", prompt: "Work on the ticket." } },
  edges: []
}
`

export const GREET = `export default {
  name: "greet",
  startAt: "hello",
  nodes: { hello: { type: "agent", prompt: "Say hello: answer {\\"greeting\\": string}.", timeoutMs: null } },
  edges: []
}
`

/** One agent step with an 8-hour limit: a step that stays in flight while the test looks at it. */
export const SLOW = `export default {
  name: "slow",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Take your time: answer {\\"done\\": true}.", timeoutMs: 28800000 } },
  edges: []
}
`
