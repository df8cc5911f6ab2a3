/**
 * The `autoimplement` built-in: agent stages the model carries out with its own tools
 * (implement, plan and run verification, publish, review, CI, deliver; `redesign` to replan),
 * joined by compute nodes that only route, validate and keep books, and two guards that read the
 * repository and forge (through the injected command runner, reads only) to skip `publish` or
 * `finalizeDelivery` when their work is already done (`repeat-guards.ts`). A stage that times
 * out goes to one shared read-only fallback (at most three per run) that picks the safest next
 * stage; failures keep their normal terminal behaviour and cancellation never routes.
 */
import { Effect, Either, Option, Schema } from "effect"
import type { StepContext, VisitRecord, WorkflowDefinition } from "../engine/definition.ts"
import {
  ciPrompt,
  fallbackPrompt,
  finalizeDeliveryPrompt,
  implementPrompt,
  publishPrompt,
  redesignPrompt,
  reviewPrompt,
  verifyPlanPrompt,
  verifyRunPrompt
} from "./autoimplement-prompts.ts"
import {
  budgetAtGuard,
  budgetOf,
  fallbacksUsed,
  MAX_FALLBACKS,
  timeoutsIn,
  checkRoute,
  FallbackDecision,
  STAGES,
  type Stage
} from "./fallback.ts"
import { type CommandRunnerService, runCommand } from "./monitor.ts"
import { DeliveryFacts, deliveryGuard, GUARD_TIMEOUT_MS, publishGuard } from "./repeat-guards.ts"

/**
 * Bump on any change to the graph, prompts or checks: runs of another revision refuse to resume.
 * 2: the publish and delivery guards.
 */
export const AUTOIMPLEMENT_REVISION = 2

const MINUTE = 60_000
/** Explicit stage limits; stages not listed use the engine default (15 minutes). */
export const STAGE_LIMITS: Readonly<Partial<Record<Stage, number>>> = {
  redesign: 60 * MINUTE,
  implement: 8 * 60 * MINUTE,
  verifyRun: 2 * 60 * MINUTE,
  review: 60 * MINUTE,
  ci: 60 * MINUTE,
  finalizeDelivery: 30 * MINUTE
}

const Text = (max: number) => Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max))
const Items = Schema.Array(Text(2_000)).pipe(Schema.maxItems(50))

export const AutoimplementInput = Schema.Struct({
  task: Text(20_000),
  plan: Schema.optional(Text(50_000)),
  repo: Schema.optional(Text(4_096))
}).annotations({ parseOptions: { onExcessProperty: "error" } })

const Outputs = {
  redesign: Schema.Struct({ plan: Text(50_000), scope: Schema.optional(Text(5_000)) }),
  implement: Schema.Struct({ summary: Text(10_000), head: Schema.optional(Text(200)) }),
  verifyPlan: Schema.Struct({ checks: Items.pipe(Schema.minItems(1)) }),
  verifyRun: Schema.Struct({ passed: Schema.Boolean, evidence: Items }),
  publish: Schema.Struct({ branch: Text(500), head: Text(200), pullRequest: Text(500) }),
  review: Schema.Struct({ verdict: Schema.Literal("approve", "changes"), head: Text(200), findings: Items }),
  ci: Schema.Struct({ state: Schema.Literal("passed", "failed"), head: Text(200), evidence: Items }),
  finalizeDelivery: Schema.Struct({
    delivered: Schema.Boolean,
    mergeCommit: Schema.NullOr(Text(200)),
    report: Text(20_000)
  })
} as const

const PROMPTS: Readonly<Record<Stage, (context: StepContext) => string>> = {
  redesign: redesignPrompt,
  implement: implementPrompt,
  verifyPlan: verifyPlanPrompt,
  verifyRun: verifyRunPrompt,
  publish: publishPrompt,
  review: reviewPrompt,
  ci: ciPrompt,
  finalizeDelivery: finalizeDeliveryPrompt
}

/** Where each stage goes on `ok` (a router node when the next stage depends on the output). */
const SUCCESS: Readonly<Record<Stage, string>> = {
  redesign: "implement",
  implement: "verifyPlan",
  verifyPlan: "verifyRun",
  verifyRun: "afterVerify",
  publish: "review",
  review: "afterReview",
  ci: "afterCi",
  finalizeDelivery: "done"
}

const stage = (id: Stage) => ({
  type: "agent" as const,
  prompt: PROMPTS[id],
  output: Outputs[id],
  ...(STAGE_LIMITS[id] === undefined ? {} : { timeoutMs: STAGE_LIMITS[id] })
})

/** `ok` → success route, `timed_out` → the fallback guard, `failed` → rethrow. */
const outcomeEdge = (id: Stage) => ({
  from: id,
  switch: {
    on: "$result.outcome",
    cases: { ok: SUCCESS[id], timed_out: "fallbackGuard", failed: "failure" }
  }
})

/** Decode a stored output with its schema; a mismatch is a defect of the graph, so it throws. */
const outputOf = <A, I>(schema: Schema.Schema<A, I>, context: StepContext, node: string): A =>
  Option.getOrThrowWith(Schema.decodeUnknownOption(schema)(context.outputs[node]), () => {
    return new Error(`node "${node}" has no valid output to route on`)
  })

const route = (next: string, findings: ReadonlyArray<string>) => ({ next, findings })

const timeoutHistory = (history: ReadonlyArray<VisitRecord>) => ({
  timeouts: timeoutsIn(history),
  fallbacks: history.filter((visit) => visit.nodeId === "fallback").map((visit) => visit.output ?? null)
})

/** The run's result when it cannot go on: the fallback chose `blocked`, or the budget is spent. */
const blockedResult = ({ history }: StepContext) => {
  const last = history.at(-1)
  const chosen =
    last?.nodeId === "fallbackRoute"
      ? Schema.decodeUnknownOption(FallbackDecision)(last.output)
      : Option.none()
  return {
    status: "blocked",
    reason: Option.match(chosen, {
      onSome: (decision) => `the timeout fallback found no safe route: ${decision.reason}`,
      onNone: () =>
        `a stage timed out after the timeout fallback already ran ${fallbacksUsed(history)} time(s) (limit ${MAX_FALLBACKS})`
    }),
    ...timeoutHistory(history)
  }
}

/** The route the fallback chose, checked against the stage that timed out (throws if unsafe). */
const resolveFallback = (context: StepContext) => {
  const budget = budgetAtGuard(context.history)
  const decision = outputOf(FallbackDecision, context, "fallback")
  const target = checkRoute(budget.source.nodeId, decision.route)
  if (Either.isLeft(target)) throw new Error(target.left)
  return { next: target.right ?? "blocked", source: budget.source.nodeId, ...decision }
}

/** The run's result when the delivery guard found the pull request merged and reported. */
const alreadyDelivered = (context: StepContext) => {
  const guard = outputOf(Schema.Struct({ facts: DeliveryFacts }), context, "deliveryGuard")
  return {
    status: "delivered",
    delivered: true,
    mergeCommit: guard.facts.mergeCommit,
    report: guard.facts.report ?? "",
    alreadyDone: true,
    ...timeoutHistory(context.history)
  }
}

const presentation = ({ result }: { readonly result: unknown }): string => {
  const value: Readonly<Record<string, unknown>> =
    typeof result === "object" && result !== null ? { ...result } : {}
  if (value.status === "delivered") return `Autoimplement delivered the task.\n${String(value.report ?? "")}`
  return `Autoimplement stopped: ${value.status === "blocked" ? String(value.reason) : "not delivered"}.\n${JSON.stringify(result, null, 2)}`
}

/** The definition, with the command runner its guards read the repository and forge through. */
export const makeAutoimplement = (runner: CommandRunnerService): WorkflowDefinition => ({
  name: "autoimplement",
  revision: AUTOIMPLEMENT_REVISION,
  description:
    "Implement a task end to end: implement, verify, publish a pull request, review, CI, deliver. A timed-out stage goes to a read-only fallback that picks the safest next stage (at most 3 per run).",
  startAt: "start",
  maxSteps: 240,
  input: AutoimplementInput,
  nodes: {
    start: {
      type: "compute",
      description: "Plan given: implement it; no plan: write one first.",
      run: ({ input }) => ({
        next: Schema.is(AutoimplementInput)(input) && input.plan !== undefined ? "implement" : "redesign"
      })
    },
    redesign: stage("redesign"),
    implement: stage("implement"),
    verifyPlan: stage("verifyPlan"),
    verifyRun: stage("verifyRun"),
    publish: stage("publish"),
    review: stage("review"),
    ci: stage("ci"),
    finalizeDelivery: stage("finalizeDelivery"),
    publishGuard: {
      type: "compute",
      description: "Read only: skip publish when the branch is pushed at HEAD and its pull request exists.",
      timeoutMs: GUARD_TIMEOUT_MS,
      run: (context) => Effect.suspend(() => publishGuard(runner)(context))
    },
    deliveryGuard: {
      type: "compute",
      description:
        "Read only: skip finalizeDelivery when the expected head is merged and the final report exists.",
      timeoutMs: GUARD_TIMEOUT_MS,
      run: (context) => Effect.suspend(() => deliveryGuard(runner)(context))
    },
    alreadyDelivered: { type: "compute", run: alreadyDelivered },
    afterVerify: {
      type: "compute",
      run: (context) => {
        const result = outputOf(Outputs.verifyRun, context, "verifyRun")
        return result.passed ? route("publish", []) : route("implement", result.evidence)
      }
    },
    afterReview: {
      type: "compute",
      run: (context) => {
        const result = outputOf(Outputs.review, context, "review")
        return result.verdict === "approve" ? route("ci", []) : route("implement", result.findings)
      }
    },
    afterCi: {
      type: "compute",
      run: (context) => {
        const result = outputOf(Outputs.ci, context, "ci")
        return result.state === "passed" ? route("finalizeDelivery", []) : route("implement", result.evidence)
      }
    },
    done: {
      type: "compute",
      run: (context) => {
        const result = outputOf(Outputs.finalizeDelivery, context, "finalizeDelivery")
        return {
          status: result.delivered ? "delivered" : "not_delivered",
          ...result,
          ...timeoutHistory(context.history)
        }
      }
    },
    fallbackGuard: {
      type: "compute",
      description: "Count the fallbacks of this run from its step records; allow at most three.",
      run: ({ history }) => budgetOf(history)
    },
    fallback: {
      type: "agent",
      description: "Read-only: inspect the state and choose the safest next stage.",
      prompt: fallbackPrompt,
      output: FallbackDecision
    },
    fallbackRoute: {
      type: "compute",
      description: "Reject a route that would skip a required stage.",
      run: resolveFallback
    },
    blocked: { type: "compute", run: blockedResult },
    failure: {
      type: "compute",
      description: "Fail the run with the failed stage's own error.",
      run: ({ history }) =>
        Effect.fail(
          new Error(history.findLast((visit) => visit.outcome === "failed")?.error ?? "a stage failed")
        )
    }
  },
  edges: [
    {
      from: "start",
      switch: { on: "$output.next", cases: { implement: "implement", redesign: "redesign" } }
    },
    ...STAGES.map(outcomeEdge),
    {
      from: "afterVerify",
      switch: { on: "$output.next", cases: { publish: "publishGuard", implement: "implement" } }
    },
    { from: "publishGuard", switch: { on: "$output.next", cases: { publish: "publish", review: "review" } } },
    {
      from: "deliveryGuard",
      switch: {
        on: "$output.next",
        cases: { finalizeDelivery: "finalizeDelivery", complete: "alreadyDelivered" }
      }
    },
    { from: "afterReview", switch: { on: "$output.next", cases: { ci: "ci", implement: "implement" } } },
    {
      from: "afterCi",
      switch: { on: "$output.next", cases: { finalizeDelivery: "deliveryGuard", implement: "implement" } }
    },
    {
      from: "fallbackGuard",
      switch: { on: "$output.next", cases: { fallback: "fallback", exhausted: "blocked" } }
    },
    // A plain edge: a fallback that fails or times out ends the run; it never routes to itself.
    { from: "fallback", to: "fallbackRoute" },
    {
      from: "fallbackRoute",
      switch: {
        on: "$output.next",
        cases: {
          redesign: "redesign",
          implement: "implement",
          verifyPlan: "verifyPlan",
          verifyRun: "verifyRun",
          publish: "publishGuard",
          review: "review",
          ci: "ci",
          finalizeDelivery: "deliveryGuard",
          blocked: "blocked"
        }
      }
    }
  ],
  presentation
})

/** What ships: the guards run their reads as child processes. */
export const autoimplement: WorkflowDefinition = makeAutoimplement({ run: runCommand })
