/**
 * Autoimplement's prompt texts. Every consequential stage tells the model to inspect the
 * current state first and do only the missing work, because the fallback can send a run back
 * to a stage whose earlier attempt already had effects (a commit, a push, a pull request, a
 * review, a merge, the final report).
 */
import type { StepContext, VisitRecord } from "../engine/definition.ts"
import { budgetAtGuard, allowedRoutes, type Stage } from "./fallback.ts"

/** The final report is a pull-request comment whose first line is this marker. */
export const FINAL_REPORT_MARKER = "Autoimplement final report"

const MAX_JSON = 6_000

const json = (value: unknown): string => {
  const text = JSON.stringify(value, null, 2) ?? "null"
  return text.length <= MAX_JSON ? text : `${text.slice(0, MAX_JSON)}\n… (cut at ${MAX_JSON} characters)`
}

const record = (value: unknown): Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {}

const text = (value: unknown): string | null => (typeof value === "string" && value.length > 0 ? value : null)

export interface Scope {
  readonly task: string
  readonly plan: string | null
  readonly repo: string
}

/** The task, the approved plan (a redesign replaces the one given at start) and the repository. */
export const scopeOf = (context: StepContext): Scope => {
  const input = record(context.input)
  const redesigned = text(record(context.outputs.redesign).plan)
  return {
    task: text(input.task) ?? "",
    plan: redesigned ?? text(input.plan),
    repo: text(input.repo) ?? "the current working directory"
  }
}

const ROUTERS = new Set(["afterVerify", "afterReview", "afterCi"])
/** The read-only guards before publish and finalizeDelivery (`repeat-guards.ts`). */
const GUARDS = new Set(["publishGuard", "deliveryGuard"])

/** Why the run arrived here: findings of a router that sent it back, or a fallback's decision. */
const arrival = (history: ReadonlyArray<VisitRecord>): string => {
  const last = history.at(-1)
  if (last === undefined) return ""
  const output = record(last.output)
  if (ROUTERS.has(last.nodeId) && Array.isArray(output.findings) && output.findings.length > 0) {
    return `\nThe run came back to this stage because of these findings; address them:\n${json(output.findings)}\n`
  }
  if (last.nodeId === "fallbackRoute") {
    return `\nA stage timed out and the timeout fallback chose this stage: ${json(output)}\n`
  }
  if (GUARDS.has(last.nodeId)) {
    return `\nBefore this stage the workflow read the repository and pull request (reads only): ${json(output)}\n`
  }
  return ""
}

const header = (stage: Stage, context: StepContext, extra = ""): string => {
  const scope = scopeOf(context)
  const { fallbackGuard: _guard, fallbackRoute: _route, start: _start, ...accepted } = context.outputs
  return [
    `Autoimplement, stage "${stage}".`,
    `Task: ${scope.task}`,
    `Repository: ${scope.repo} (work only inside it and only within the approved scope).`,
    `Approved plan: ${scope.plan ?? "(none yet)"}`,
    `Accepted outputs of earlier stages: ${json(accepted)}`,
    arrival(context.history),
    extra
  ].join("\n")
}

const REPEAT =
  "This stage may be a repeat of an earlier attempt that already did part of the work. Inspect the current state before you act and do only the missing work."

const answer = (shape: string) => `Answer with the workflow tool (action "submit") and output ${shape}.`

export const redesignPrompt = (context: StepContext) =>
  header("redesign", context) +
  "\nWrite the implementation plan for the task (replace the current one if there is one: current evidence invalidated it). " +
  "Read the repository, change nothing.\n" +
  answer('{"plan": "the plan", "scope": "what may change"}')

export const implementPrompt = (context: StepContext) =>
  header("implement", context) +
  `\n${REPEAT} Inspect \`git status\`, \`git diff\` and \`git log\` first: changes already committed must not be committed again, and an edit already made must not be made twice. ` +
  "Implement the approved plan on the work branch and commit it. Do not push.\n" +
  answer('{"summary": "what changed", "head": "the commit SHA of HEAD"}')

export const verifyPlanPrompt = (context: StepContext) =>
  header("verifyPlan", context) +
  "\nDecide which checks prove the implementation correct (tests, type checks, linters, a manual check). Do not run them and do not change files.\n" +
  answer('{"checks": ["one check per item"]}')

export const verifyRunPrompt = (context: StepContext) =>
  header("verifyRun", context) +
  "\nRun the planned checks against the current HEAD. Do not change files.\n" +
  answer('{"passed": true|false, "evidence": ["what each check showed"]}')

export const publishPrompt = (context: StepContext) =>
  header("publish", context) +
  `\n${REPEAT} Inspect first: uncommitted changes (\`git status\`); whether the remote branch already holds HEAD (\`git ls-remote origin <branch>\`); whether a pull request for the branch already exists (\`gh pr list --head <branch> --state all\`). ` +
  "Commit only uncommitted changes, push only when the remote branch lacks HEAD, and open a pull request only when none exists for the branch.\n" +
  answer(
    '{"branch": "the work branch", "head": "the pushed commit SHA", "pullRequest": "the pull request number or URL"}'
  )

export const reviewPrompt = (context: StepContext) =>
  header("review", context) +
  `\n${REPEAT} Review the pull request at its current head. If an accepted review of exactly this head already exists, reuse it and post nothing; a review of an older head does not count. Otherwise review the diff and post one review.\n` +
  answer(
    '{"verdict": "approve"|"changes", "head": "the reviewed commit SHA", "findings": ["one finding per item"]}'
  )

export const ciPrompt = (context: StepContext) =>
  header("ci", context) +
  "\nInspect CI for the pull request's current head (`gh pr checks`). Wait for checks that are still running. Change nothing.\n" +
  answer('{"state": "passed"|"failed", "head": "the commit SHA", "evidence": ["check: result"]}')

export const finalizeDeliveryPrompt = (context: StepContext) =>
  header("finalizeDelivery", context) +
  `\n${REPEAT} Inspect first: whether the expected head is already merged (\`gh pr view --json state,mergeCommit\`), and whether the final report already exists (a pull-request comment whose first line is "${FINAL_REPORT_MARKER}"). ` +
  `Merge only when the pull request is not merged yet; post the final report (first line "${FINAL_REPORT_MARKER}") only when it does not exist yet.\n` +
  answer('{"delivered": true|false, "mergeCommit": "SHA or null", "report": "the final report"}')

export const fallbackPrompt = (context: StepContext) => {
  const budget = budgetAtGuard(context.history)
  const source = budget.source
  const earlier = context.history.filter((visit) => visit.nodeId === "fallback").map((visit) => visit.output)
  return (
    header(source.nodeId, context) +
    `\nThe stage "${source.nodeId}" timed out (attempt ${source.attemptId}: ${source.error ?? "no error text"}). ` +
    `You are the read-only timeout fallback (${budget.used + 1} of at most ${budget.limit} in this run). ` +
    "Change nothing: no edit, commit, push, pull-request update, comment or merge.\n" +
    "Inspect the worktree, branch, diff and commits; the remote branch and the pull request if they exist; review and CI state; merge and final-report state. Then choose the safest next stage:\n" +
    "- retry: the timed-out stage's work is incomplete; run it again\n" +
    "- verify: implementation is ready; continue at verification\n" +
    "- review: publication is complete for the current head; continue at review\n" +
    "- ci: review is complete; CI is the next open stage\n" +
    "- deliver: delivery is the next open stage, or its outcome is uncertain\n" +
    "- replan: current evidence invalidates the approved plan\n" +
    "- blocked: no safe route exists within the approved scope\n" +
    `Routes allowed after a timeout in "${source.nodeId}": ${allowedRoutes(source.nodeId).join(", ")}.\n` +
    `Earlier timeouts: ${json(budget.timeouts)}\nEarlier fallback results: ${json(earlier)}\n` +
    answer(
      '{"route": "one of the routes", "reason": "why this is the safest next stage", "evidence": ["state you inspected"]}'
    )
  )
}
