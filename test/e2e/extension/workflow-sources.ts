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

/**
 * A waiting checkpoint, then an agent step that reads its answer: `ask` waits (no limit) for the
 * model's `workflow answer` or the user's `/workflow answer`; `confirm` quotes the answer.
 */
export const APPROVAL = `export default {
  name: "approval",
  description: "Ask before shipping release 2.0",
  startAt: "ask",
  nodes: {
    ask: { type: "wait", prompt: "Ship release 2.0 now? Answer yes or no." },
    confirm: {
      type: "agent",
      prompt: ({ results }) => "The release question was answered " + JSON.stringify(results.ask.output.answer) + ". Confirm: answer {\\"shipped\\": boolean}.",
      timeoutMs: null
    }
  },
  edges: [{ from: "ask", to: "confirm" }],
  presentation: ({ result }) => "Release 2.0: " + (result.shipped ? "shipped" : "held") + "."
}
`

/**
 * An agent step with a 1 s limit whose `timed_out` route leads to a waiting checkpoint that asks
 * the question instead; `decide` takes the review's output or the answer.
 */
export const ESCALATE = `export default {
  name: "escalate",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch and answer {\\"approved\\": boolean}.", timeoutMs: 1000 },
    ask: {
      type: "wait",
      prompt: ({ results }) => "The review step timed out (" + results.review.error + "). Approve the patch anyway? Answer yes or no."
    },
    decide: {
      type: "compute",
      run: ({ outputs }) => ({ approved: outputs.review ? outputs.review.approved : outputs.ask.answer === "yes" })
    }
  },
  edges: [
    { from: "review", switch: { on: "$result.outcome", cases: { ok: "decide", timed_out: "ask" } } },
    { from: "ask", to: "decide" }
  ],
  presentation: ({ result }) => "Escalation finished: " + (result.approved ? "approved" : "rejected") + "."
}
`

/** `escalate` with an agent step after the wait: `confirm` quotes the answer. */
export const ESCALATE_CONFIRM = `export default {
  name: "escalate-confirm",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch and answer {\\"approved\\": boolean}.", timeoutMs: 1000 },
    ask: {
      type: "wait",
      prompt: ({ results }) => "The review step timed out (" + results.review.error + "). Approve the patch anyway? Answer yes or no."
    },
    confirm: {
      type: "agent",
      prompt: ({ results }) => "The escalation was answered " + JSON.stringify(results.ask.output.answer) + ". Confirm: answer {\\"approved\\": boolean}.",
      timeoutMs: null
    }
  },
  edges: [
    { from: "review", switch: { on: "$result.outcome", cases: { ok: "confirm", timed_out: "ask" } } },
    { from: "ask", to: "confirm" }
  ],
  presentation: ({ result }) => "Escalation finished: " + (result.approved ? "approved" : "rejected") + "."
}
`

/** A waiting checkpoint with a 1 s limit: `late` runs when no answer came in time. */
export const DEADLINE = `export default {
  name: "deadline",
  startAt: "ask",
  nodes: {
    ask: { type: "wait", prompt: "Ship release 2.0 now? Answer within a second.", timeoutMs: 1000 },
    use: { type: "compute", run: ({ outputs }) => ({ answer: outputs.ask.answer }) },
    late: { type: "compute", run: ({ results }) => ({ late: results.ask.error }) }
  },
  edges: [{ from: "ask", switch: { on: "$result.outcome", cases: { ok: "use", timed_out: "late" } } }],
  presentation: ({ result }) => (result.late ? "No answer in time (" + result.late + ")." : "Answered " + result.answer + ".")
}
`
