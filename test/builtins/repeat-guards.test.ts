/**
 * Autoimplement's guards before `publish` and `finalizeDelivery`, on the real engine with the
 * fake forge (a local bare remote, a fake `gh`) and a scripted model that never inspects: asked
 * to publish it pushes and opens a pull request, asked to deliver it merges and posts the final
 * report, every time. `publish` and `finalizeDelivery` each act, then time out; the fallback
 * blindly answers `retry`. Only the guards (reading the forge through the injected command
 * runner) stand between the repeated stage and a second pull request or final report.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { FINAL_REPORT_MARKER } from "../../src/builtins/autoimplement-prompts.ts"
import { makeAutoimplement } from "../../src/builtins/autoimplement.ts"
import { type CommandRunnerService, CommandNotStarted, runCommand } from "../../src/builtins/monitor.ts"
import { decideDelivery, decidePublish } from "../../src/builtins/repeat-guards.ts"
import { makeHarness } from "../engine/support/harness.ts"
import { createForge, type Forge } from "./fake-forge.ts"
import { drive, LONG_LEASE, OK, type Script, submit, TIME_OUT } from "./support.ts"

/** The forge in a temp dir of its own, removed with the scope. */
const forgeScoped = Effect.acquireRelease(
  Effect.sync(() => {
    const root = mkdtempSync(join(tmpdir(), "pwt-guards-"))
    return { root, forge: createForge(root, join(root, "work")) }
  }),
  ({ root }) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

/** Commands the guards may run: reads only. */
const READS = [
  ["git", "symbolic-ref"],
  ["git", "rev-parse"],
  ["git", "--no-optional-locks", "status"],
  ["git", "ls-remote"],
  ["gh", "pr", "list"],
  ["gh", "pr", "view"]
]

/** The live runner with the forge's environment (`env` sets it, then runs the command), recording what it ran. */
const forgeRunner = (forge: Forge, ran: Array<ReadonlyArray<string>>): CommandRunnerService => ({
  run: (spec) => {
    ran.push(spec.argv)
    const vars = Object.entries(forge.env).map(([name, value]) => `${name}=${value}`)
    return runCommand({ ...spec, argv: ["env", ...vars, ...spec.argv] })
  }
})

/**
 * The model that never looks first. Each action runs as the model's shell would; a failing
 * command (a merge of a merged pull request) is noted and the model carries on.
 */
const blindModel = (forge: Forge) => {
  const actions: Array<string> = []
  const sh = (label: string, ...argv: ReadonlyArray<string>) => {
    actions.push(label)
    try {
      return execFileSync(argv[0] ?? "", argv.slice(1), {
        cwd: forge.repo,
        env: { ...process.env, ...forge.env },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"]
      }).trim()
    } catch {
      actions.push(`${label} failed`)
      return ""
    }
  }
  const head = () => sh("read head", "git", "rev-parse", "HEAD")
  const script: Script = (node, visit) => {
    switch (node) {
      case "implement":
        sh("branch", "git", "checkout", "-q", "-B", "work")
        writeFileSync(join(forge.repo, "feature.txt"), "verbose\n")
        sh("add", "git", "add", "feature.txt")
        sh("commit", "git", "commit", "-qm", "Add --verbose")
        return submit({ summary: "added feature.txt", head: head() })
      case "publish":
        sh("push", "git", "push", "-q", "origin", "work")
        sh("pr create", "gh", "pr", "create", "--head", "work", "--base", "main", "--title", "Add --verbose")
        return visit === 1 ? TIME_OUT : submit({ branch: "work", head: head(), pullRequest: "1" })
      case "review":
        sh("review", "gh", "pr", "review", "1", "--approve")
        return submit({ verdict: "approve", head: head(), findings: [] })
      case "finalizeDelivery": {
        sh("merge", "gh", "pr", "merge", "1", "--merge")
        const report = `${FINAL_REPORT_MARKER}: merged feature.txt`
        sh("comment", "gh", "pr", "comment", "1", "--body", report)
        return visit === 1 ? TIME_OUT : submit({ delivered: true, mergeCommit: head(), report })
      }
      case "fallback":
        return submit({
          route: "retry",
          reason: "it timed out; do it again",
          evidence: ["nothing inspected"]
        })
      default:
        return submit(OK[node as keyof typeof OK])
    }
  }
  return { script, actions }
}

const TASK = (repo: string) => ({ task: "add a --verbose flag", plan: "write feature.txt", repo })

describe("autoimplement's guards repeat only missing work, whatever the model does", () => {
  it.scoped(
    "a blind model after a timed-out publish and a timed-out delivery: one push, one PR, one merge, one report",
    () =>
      Effect.gen(function* () {
        const { forge } = yield* forgeScoped
        const ran: Array<ReadonlyArray<string>> = []
        const model = blindModel(forge)
        const h = yield* makeHarness({
          definitions: [makeAutoimplement(forgeRunner(forge, ran))],
          config: LONG_LEASE
        })
        const run = yield* drive(h, yield* h.launch("autoimplement", TASK(forge.repo)), model.script)

        expect([run.state, (run.result as { status: string }).status]).toEqual(["completed", "delivered"])
        // The forge: one ref update of the branch, one pull request, one merge, one final report.
        expect(forge.pushes().filter((line) => line.endsWith("refs/heads/work"))).toHaveLength(1)
        expect(forge.ghLog()).toEqual(["create", "review", "merge", "comment"])
        const [pr, ...more] = forge.state().prs
        expect(more).toEqual([])
        expect(pr?.state).toBe("MERGED")
        expect(pr?.comments).toHaveLength(1)
        expect(model.actions.filter((a) => ["push", "pr create", "merge", "comment"].includes(a))).toEqual([
          "push",
          "pr create",
          "merge",
          "comment"
        ])
        // Each repeated stage was skipped by its guard: the model was asked once.
        expect(run.prompts.filter((node) => node === "publish")).toHaveLength(1)
        expect(run.prompts.filter((node) => node === "finalizeDelivery")).toHaveLength(1)
        expect(run.prompts.filter((node) => node === "fallback")).toHaveLength(2)
        expect(run.texts[run.prompts.indexOf("review")]).toContain("publication is already complete")
        expect(run.result).toMatchObject({
          delivered: true,
          alreadyDone: true,
          report: `${FINAL_REPORT_MARKER}: merged feature.txt`,
          timeouts: [{ nodeId: "publish" }, { nodeId: "finalizeDelivery" }]
        })
        const steps = run.status.stepRecords.map((step) => step.nodeId)
        expect(steps.filter((node) => node === "publishGuard")).toHaveLength(2)
        expect(steps.filter((node) => node === "deliveryGuard")).toHaveLength(2)
        // The guards only read.
        expect(ran.length).toBeGreaterThan(0)
        for (const argv of ran) {
          expect(
            READS.some((prefix) => prefix.every((word, i) => argv[i] === word)),
            argv.join(" ")
          ).toBe(true)
        }
      })
  )

  it.scoped(
    "a guard that cannot read the state sends the run to the stage (nothing is skipped on a guess)",
    () =>
      Effect.gen(function* () {
        const { forge } = yield* forgeScoped
        const model = blindModel(forge)
        const unreadable: CommandRunnerService = {
          run: (spec) =>
            Effect.fail(new CommandNotStarted({ program: spec.argv[0] ?? "", reason: "not found" }))
        }
        const h = yield* makeHarness({ definitions: [makeAutoimplement(unreadable)], config: LONG_LEASE })
        const run = yield* drive(
          h,
          yield* h.launch("autoimplement", TASK(forge.repo)),
          (node, visit, prompt) =>
            node === "publish" || node === "finalizeDelivery"
              ? submit(
                  node === "publish"
                    ? { branch: "work", head: "abc1234", pullRequest: "1" }
                    : { delivered: true, mergeCommit: null, report: `${FINAL_REPORT_MARKER}: done` }
                )
              : model.script(node, visit, prompt)
        )
        expect(run.state).toBe("completed")
        expect(run.prompts).toContain("publish")
        expect(run.prompts).toContain("finalizeDelivery")
        expect(run.texts[run.prompts.indexOf("publish")]).toContain("publication is not known to be complete")
      })
  )
})

describe("the guards' decisions (pure)", () => {
  const published = {
    branch: "work",
    head: "a".repeat(40),
    uncommitted: false,
    remoteHead: "a".repeat(40),
    pullRequest: "7"
  }
  it("publish is skipped only when clean, pushed at HEAD and a pull request exists", () => {
    expect(decidePublish(published).next).toBe("review")
    expect(decidePublish({ ...published, uncommitted: true }).next).toBe("publish")
    expect(decidePublish({ ...published, uncommitted: null }).next).toBe("publish")
    expect(decidePublish({ ...published, remoteHead: "b".repeat(40) }).next).toBe("publish")
    expect(decidePublish({ ...published, remoteHead: null }).next).toBe("publish")
    expect(decidePublish({ ...published, pullRequest: null }).next).toBe("publish")
  })

  const delivered = {
    pullRequest: "7",
    expectedHead: "a".repeat(40),
    state: "MERGED",
    mergedHead: "a".repeat(40),
    mergeCommit: "c".repeat(40),
    report: `${FINAL_REPORT_MARKER}: shipped`
  }
  it("delivery is skipped only when the expected head is merged and the final report exists", () => {
    expect(decideDelivery(delivered).next).toBe("complete")
    expect(decideDelivery({ ...delivered, report: null })).toMatchObject({
      next: "finalizeDelivery",
      reason: expect.stringContaining("only the final report is missing")
    })
    expect(decideDelivery({ ...delivered, expectedHead: "a".repeat(8) }).next).toBe("complete")
    expect(decideDelivery({ ...delivered, mergedHead: "b".repeat(40) }).next).toBe("finalizeDelivery")
    expect(decideDelivery({ ...delivered, expectedHead: "current" }).next).toBe("finalizeDelivery")
    expect(decideDelivery({ ...delivered, state: "OPEN", mergedHead: null }).next).toBe("finalizeDelivery")
    expect(decideDelivery({ ...delivered, expectedHead: null }).next).toBe("finalizeDelivery")
  })
})
