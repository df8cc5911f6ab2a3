/**
 * Autoimplement's "repeat only missing work", enforced: compute guards before `publish` and
 * `finalizeDelivery` read the repository and the forge through the injected command runner and
 * route past a stage whose work is already done, whatever the model would do if asked again.
 * They only read (`git --no-optional-locks status`, `git rev-parse`, `git ls-remote`,
 * `gh pr list`, `gh pr view`); a command that fails, times out or prints what cannot be decoded
 * leaves its fact unknown, and an unknown fact sends the run to the stage (whose prompt still
 * says to inspect first). So a guard can only skip work it has seen done.
 */
import { Effect, Option, Schema } from "effect"
import type { StepContext } from "../engine/definition.ts"
import { FINAL_REPORT_MARKER } from "./autoimplement-prompts.ts"
import type { CommandRunnerService } from "./monitor.ts"

/** How long one read may take before its fact counts as unknown. */
export const READ_TIMEOUT_MS = 60_000
/** The guard node's own limit, a backstop over its at most five reads. */
export const GUARD_TIMEOUT_MS = 6 * READ_TIMEOUT_MS
const MAX_OUTPUT_BYTES = 256 * 1024

/** What the publish guard saw (null: could not be read). */
export interface PublishFacts {
  readonly branch: string | null
  readonly head: string | null
  readonly uncommitted: boolean | null
  readonly remoteHead: string | null
  /** An open or merged pull request for the branch (its number). */
  readonly pullRequest: string | null
}

export interface PublishDecision {
  readonly next: "publish" | "review"
  readonly reason: string
  readonly facts: PublishFacts
}

/** What the delivery guard saw (null: could not be read). */
export const DeliveryFacts = Schema.Struct({
  pullRequest: Schema.NullOr(Schema.String),
  /** The head review and CI accepted. */
  expectedHead: Schema.NullOr(Schema.String),
  state: Schema.NullOr(Schema.String),
  mergedHead: Schema.NullOr(Schema.String),
  mergeCommit: Schema.NullOr(Schema.String),
  /** The final report comment, when one exists. */
  report: Schema.NullOr(Schema.String)
})
export type DeliveryFacts = typeof DeliveryFacts.Type

export interface DeliveryDecision {
  readonly next: "finalizeDelivery" | "complete"
  readonly reason: string
  readonly facts: DeliveryFacts
}

/** Pure: publication is done when the tree is clean, the remote branch holds HEAD and a pull request exists. */
export const decidePublish = (facts: PublishFacts): PublishDecision => {
  const done =
    facts.branch !== null &&
    facts.head !== null &&
    facts.uncommitted === false &&
    facts.remoteHead === facts.head &&
    facts.pullRequest !== null
  return {
    next: done ? "review" : "publish",
    reason: done
      ? `publication is already complete: branch ${facts.branch} is pushed at ${facts.head} and pull request ${facts.pullRequest} exists; publish is skipped`
      : "publication is not known to be complete; publish runs",
    facts
  }
}

const HEX = /^[0-9a-f]{7,64}$/i

/** One commit named twice, perhaps once abbreviated (at least 7 hex digits). */
const sameCommit = (a: string | null, b: string | null): boolean =>
  a !== null &&
  b !== null &&
  HEX.test(a) &&
  HEX.test(b) &&
  (a.toLowerCase().startsWith(b.toLowerCase()) || b.toLowerCase().startsWith(a.toLowerCase()))

/** Pure: delivery is done when the pull request is merged at the expected head and the final report exists. */
export const decideDelivery = (facts: DeliveryFacts): DeliveryDecision => {
  const merged = facts.state === "MERGED" && sameCommit(facts.mergedHead, facts.expectedHead)
  const done = merged && facts.report !== null
  return {
    next: done ? "complete" : "finalizeDelivery",
    reason: done
      ? `delivery is already complete: pull request ${facts.pullRequest} is merged at ${facts.expectedHead} and the final report exists; finalizeDelivery is skipped`
      : merged
        ? `pull request ${facts.pullRequest} is already merged at the expected head; only the final report is missing`
        : "delivery is not known to be complete; finalizeDelivery runs",
    facts
  }
}

/** A read's standard output when the command exited 0 within its time; none otherwise. */
const read = (runner: CommandRunnerService, cwd: string | undefined, argv: ReadonlyArray<string>) =>
  runner.run({ argv, maxOutputBytes: MAX_OUTPUT_BYTES, ...(cwd === undefined ? {} : { cwd }) }).pipe(
    Effect.timeoutOption(READ_TIMEOUT_MS),
    Effect.map(Option.filter((result) => result.exitCode === 0 && !result.truncated)),
    Effect.map(Option.map((result) => result.stdout.trim())),
    Effect.orElseSucceed(() => Option.none<string>())
  )

const orNull = <A>(option: Option.Option<A>): A | null => Option.getOrNull(option)

const SHA = /^[0-9a-f]{7,64}$/
const sha = (text: string): Option.Option<string> => (SHA.test(text) ? Option.some(text) : Option.none())

const decodeJson = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownOption(Schema.parseJson(schema))
  return (text: string): Option.Option<A> => decode(text)
}

const PullRequests = decodeJson(Schema.Array(Schema.Struct({ number: Schema.Number, state: Schema.String })))

const PullRequestView = decodeJson(
  Schema.Struct({
    state: Schema.String,
    headRefOid: Schema.NullOr(Schema.String),
    mergeCommit: Schema.NullOr(Schema.Struct({ oid: Schema.String })),
    comments: Schema.Array(Schema.Struct({ body: Schema.String }))
  })
)

const decodeOption = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownOption(schema)
const Named = Schema.String.pipe(Schema.minLength(1))
const RepoInput = decodeOption(Schema.Struct({ repo: Named }))
const Reviewed = decodeOption(Schema.Struct({ head: Named }))
const Published = decodeOption(Schema.Struct({ head: Named, pullRequest: Named }))
const GuardSaw = decodeOption(
  Schema.Struct({ facts: Schema.Struct({ head: Schema.NullOr(Named), pullRequest: Schema.NullOr(Named) }) })
)

/** The repository the run works in: `input.repo`, else the process's working directory. */
export const repoOf = (context: StepContext): string | undefined =>
  Option.getOrUndefined(Option.map(RepoInput(context.input), (input) => input.repo))

/** Read the publication state of the checked-out branch. */
export const publishFacts = (runner: CommandRunnerService, cwd: string | undefined) =>
  Effect.gen(function* () {
    const branch = orNull(yield* read(runner, cwd, ["git", "symbolic-ref", "--quiet", "--short", "HEAD"]))
    const head = orNull(Option.flatMap(yield* read(runner, cwd, ["git", "rev-parse", "HEAD"]), sha))
    // --no-optional-locks: status must not refresh the index (a write).
    const status = yield* read(runner, cwd, ["git", "--no-optional-locks", "status", "--porcelain"])
    if (branch === null || head === null) {
      return {
        branch,
        head,
        uncommitted: orNull(Option.map(status, (s) => s !== "")),
        remoteHead: null,
        pullRequest: null
      }
    }
    const remote = yield* read(runner, cwd, ["git", "ls-remote", "origin", `refs/heads/${branch}`])
    const prs = yield* read(runner, cwd, [
      "gh",
      "pr",
      "list",
      "--head",
      branch,
      "--state",
      "all",
      "--json",
      "number,state"
    ])
    const live = Option.flatMap(Option.flatMap(prs, PullRequests), (list) =>
      Option.fromNullable(list.find((pr) => pr.state === "OPEN" || pr.state === "MERGED"))
    )
    return {
      branch,
      head,
      uncommitted: orNull(Option.map(status, (s) => s !== "")),
      remoteHead: orNull(Option.flatMap(remote, (out) => sha(out.split(/\s/)[0] ?? ""))),
      pullRequest: orNull(Option.map(live, (pr) => String(pr.number)))
    } satisfies PublishFacts
  })

const isReport = (body: string) => (body.split("\n")[0] ?? "").trim().startsWith(FINAL_REPORT_MARKER)

/**
 * The pull request and head the earlier stages accepted: the published ones (from `publish`, or
 * from the publish guard when it skipped the stage), and review's head over publication's.
 */
export const expectedOf = (context: StepContext) => {
  const published = Published(context.outputs.publish)
  const guarded = Option.map(GuardSaw(context.outputs.publishGuard), (guard) => guard.facts)
  const first = <A>(...options: ReadonlyArray<Option.Option<A | null>>): A | null =>
    options.reduce<A | null>((found, option) => found ?? Option.getOrNull(option) ?? null, null)
  return {
    pullRequest: first(
      Option.map(published, (p) => p.pullRequest),
      Option.map(guarded, (g) => g.pullRequest)
    ),
    expectedHead: first(
      Option.map(Reviewed(context.outputs.review), (r) => r.head),
      Option.map(published, (p) => p.head),
      Option.map(guarded, (g) => g.head)
    )
  }
}

/** Read the merge and final-report state of the run's pull request. */
export const deliveryFacts = (
  runner: CommandRunnerService,
  cwd: string | undefined,
  expected: { readonly pullRequest: string | null; readonly expectedHead: string | null }
) =>
  Effect.gen(function* () {
    const unknown: DeliveryFacts = {
      ...expected,
      state: null,
      mergedHead: null,
      mergeCommit: null,
      report: null
    }
    if (expected.pullRequest === null) return unknown
    const viewed = Option.flatMap(
      yield* read(runner, cwd, [
        "gh",
        "pr",
        "view",
        expected.pullRequest,
        "--json",
        "state,headRefOid,mergeCommit,comments"
      ]),
      PullRequestView
    )
    if (Option.isNone(viewed)) return unknown
    const pr = viewed.value
    return {
      ...expected,
      state: pr.state,
      mergedHead: pr.state === "MERGED" ? pr.headRefOid : null,
      mergeCommit: pr.mergeCommit?.oid ?? null,
      report: pr.comments.find((comment) => isReport(comment.body))?.body ?? null
    } satisfies DeliveryFacts
  })

export const publishGuard = (runner: CommandRunnerService) => (context: StepContext) =>
  Effect.map(publishFacts(runner, repoOf(context)), decidePublish).pipe(
    Effect.withSpan("autoimplement.publishGuard")
  )

export const deliveryGuard = (runner: CommandRunnerService) => (context: StepContext) =>
  Effect.map(deliveryFacts(runner, repoOf(context), expectedOf(context)), decideDelivery).pipe(
    Effect.withSpan("autoimplement.deliveryGuard")
  )
