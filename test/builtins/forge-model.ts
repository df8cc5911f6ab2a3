/**
 * A scripted model that carries out Autoimplement's stages against the fake forge the way the
 * prompts instruct: inspect with bash first, act only on what is missing, then submit. It is a
 * state machine over the mock server's requests: a stage prompt starts a stage, each tool
 * result feeds the stage's next step. `stall` makes a stage act and then end its turn without
 * submitting, as a model that ran out of time would.
 */
import type { ChatRequest, Reply } from "../e2e/harness/mock-openai.ts"
import { messageText, requestIdIn } from "../e2e/extension/lab.ts"
import { FINAL_REPORT_MARKER } from "../../src/builtins/autoimplement-prompts.ts"

type Next = (toolOutput: string) => Reply

const bash = (command: string): Reply => ({ toolCalls: [{ name: "bash", arguments: { command } }] })
const submit = (requestId: string, output: unknown): Reply => ({
  toolCalls: [{ name: "workflow", arguments: { action: "submit", requestId, output } }]
})

const field = (output: string, name: string): string =>
  new RegExp(`^${name}:(.*)$`, "m").exec(output)?.[1]?.trim() ?? ""
const sha = (output: string): string => /\b[0-9a-f]{40}\b/.exec(output)?.[0] ?? ""
const json = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export interface ForgeModel {
  readonly step: (request: ChatRequest) => Reply
  /** How many prompts of each stage the model got. */
  readonly visits: Map<string, number>
  /** How many turns ended without a submit (stalls). */
  readonly stalls: () => number
}

export const makeForgeModel = (options: {
  readonly start: Reply
  /** Stage → visits (1-based) on which it acts but does not submit. */
  readonly stall: Readonly<Record<string, ReadonlyArray<number>>>
}): ForgeModel => {
  const visits = new Map<string, number>()
  let next: Next | null = null
  let started = false
  let stalled = 0

  const finish = (requestId: string, output: unknown): Reply => {
    next = () => ({ text: "Submitted." })
    return submit(requestId, output)
  }

  const stage = (name: string, requestId: string, visit: number): Reply => {
    const stalls = (options.stall[name] ?? []).includes(visit)
    const inspectThen = (command: string, then: Next): Reply => {
      next = then
      return bash(command)
    }
    const actThen =
      (command: string, output: (result: string) => unknown): Next =>
      (inspected) => {
        const action = command.length === 0 ? "true" : command
        next = (result) => {
          if (stalls) {
            next = null
            stalled++
            return { text: "Still working on it." }
          }
          return finish(requestId, output(`${inspected}\n${result}`))
        }
        return bash(action)
      }
    switch (name) {
      case "implement":
        return inspectThen("echo ahead:$(git rev-list --count main..work 2>/dev/null || echo 0)", (out) =>
          actThen(
            field(out, "ahead") === "0"
              ? "git checkout -q -B work && echo verbose > feature.txt && git add feature.txt && git commit -qm 'Add --verbose' && git rev-parse HEAD"
              : "git checkout -q work && git rev-parse HEAD",
            (all) => ({ summary: "added feature.txt", head: sha(all) })
          )(out)
        )
      case "verifyPlan":
        return finish(requestId, { checks: ["test -f feature.txt"] })
      case "verifyRun":
        return inspectThen("test -f feature.txt && echo PASS || echo FAIL", (out) =>
          finish(requestId, { passed: out.includes("PASS"), evidence: [out.trim()] })
        )
      case "publish":
        return inspectThen(
          "echo dirty:$(git status --porcelain | wc -l); echo local:$(git rev-parse HEAD); echo remote:$(git ls-remote origin refs/heads/work | cut -f1); echo prs:$(gh pr list --head work --state all)",
          (out) => {
            const steps = [
              field(out, "dirty") === "0" ? "" : "git commit -qam 'Remaining changes'",
              field(out, "remote") === field(out, "local") ? "" : "git push -q origin work",
              field(out, "prs") === "[]"
                ? "gh pr create --head work --base main --title 'Add --verbose' --body task"
                : ""
            ].filter((command) => command.length > 0)
            return actThen(steps.join(" && "), () => ({
              branch: "work",
              head: field(out, "local"),
              pullRequest: "1"
            }))(out)
          }
        )
      case "fallback":
        return inspectThen(
          "git status --short; git log --oneline -3; git ls-remote origin; gh pr list --head work --state all",
          (out) =>
            finish(requestId, {
              route: "retry",
              reason: "the timed-out stage never reported; run it again, it inspects before acting",
              evidence: out
                .split("\n")
                .filter((line) => line.trim().length > 0)
                .slice(0, 10)
            })
        )
      case "review":
        return inspectThen("gh pr view 1", (out) => {
          const pr = json(out) as { headRefOid: string; reviews: Array<{ state: string; commit: string }> }
          const reviewed = pr.reviews.some((r) => r.state === "APPROVED" && r.commit === pr.headRefOid)
          return actThen(reviewed ? "" : "gh pr review 1 --approve --body 'Looks right'", () => ({
            verdict: "approve",
            head: pr.headRefOid,
            findings: []
          }))(out)
        })
      case "ci":
        return inspectThen("gh pr checks 1", (out) =>
          finish(requestId, { state: "passed", head: "current", evidence: [out.trim()] })
        )
      case "finalizeDelivery":
        return inspectThen("gh pr view 1", (out) => {
          const pr = json(out) as { state: string; headRefOid: string; comments: Array<{ body: string }> }
          const reported = pr.comments.some((c) => c.body.startsWith(FINAL_REPORT_MARKER))
          const steps = [
            pr.state === "MERGED" ? "" : "gh pr merge 1 --merge",
            reported ? "" : `gh pr comment 1 --body '${FINAL_REPORT_MARKER}: merged feature.txt'`
          ].filter((command) => command.length > 0)
          return actThen(steps.join(" && "), () => ({
            delivered: true,
            mergeCommit: pr.headRefOid,
            report: `${FINAL_REPORT_MARKER}: merged feature.txt`
          }))(out)
        })
      default:
        return { text: `unexpected stage ${name}` }
    }
  }

  const step = (request: ChatRequest): Reply => {
    const last = request.messages.at(-1)
    const text = messageText(last)
    const prompt = /is waiting for step "([A-Za-z]+)"/.exec(text)
    if (last?.role === "user" && prompt?.[1] !== undefined) {
      const name = prompt[1]
      const visit = (visits.get(name) ?? 0) + 1
      visits.set(name, visit)
      return stage(name, requestIdIn(text), visit)
    }
    if (last?.role === "tool" && next !== null) {
      const continuation = next
      next = null
      return continuation(text)
    }
    if (!started) {
      started = true
      next = () => ({ text: "Autoimplement is queued." })
      return options.start
    }
    return { text: "ok" }
  }
  return { step, visits, stalls: () => stalled }
}
