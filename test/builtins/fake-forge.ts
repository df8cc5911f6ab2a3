/**
 * A local stand-in for a code forge: a work repository whose `origin` is a local bare
 * repository (every push is logged by a hook), and a fake `gh` on PATH that keeps pull
 * requests, reviews, checks, merges and comments in a JSON file. Nothing leaves the temp dir.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export interface Forge {
  readonly repo: string
  readonly remote: string
  readonly bin: string
  /** Environment for processes that use the forge (PATH first, then the state locations). */
  readonly env: Readonly<Record<string, string>>
  /** One line per ref update the remote received. */
  pushes(): ReadonlyArray<string>
  /** Every mutating `gh` call, in order: "create", "review", "merge", "comment". */
  ghLog(): ReadonlyArray<string>
  state(): ForgeState
  commitsOnWork(): number
}

export interface ForgeState {
  readonly prs: ReadonlyArray<{
    readonly number: number
    readonly headRefName: string
    readonly state: "OPEN" | "MERGED"
    readonly mergeCommit: { readonly oid: string } | null
    readonly reviews: ReadonlyArray<{ readonly state: string; readonly commit: string }>
    readonly comments: ReadonlyArray<{ readonly body: string }>
  }>
  readonly log: ReadonlyArray<string>
}

// The fake gh: just the subcommands the scripted model uses, with gh's flag shapes.
const GH = `#!/usr/bin/env node
const { execFileSync } = require("node:child_process")
const fs = require("node:fs")
const file = process.env.FAKE_GH_STATE
const remote = process.env.FAKE_GH_REMOTE
const state = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : { prs: [], log: [] }
const save = () => fs.writeFileSync(file, JSON.stringify(state, null, 2))
const args = process.argv.slice(2)
const flag = (name) => { const i = args.indexOf(name); return i < 0 ? undefined : args[i + 1] }
const head = (branch) => { try { return execFileSync("git", ["--git-dir", remote, "rev-parse", "refs/heads/" + branch], { encoding: "utf8" }).trim() } catch { return null } }
const find = (n) => { const pr = state.prs.find((p) => p.number === Number(n)); if (!pr) { console.error("no pull request " + n); process.exit(1) } return pr }
const view = (pr) => ({ ...pr, headRefOid: head(pr.headRefName) })
const [group, verb, target] = args
if (group !== "pr") { console.error("fake gh: unsupported " + args.join(" ")); process.exit(2) }
if (verb === "list") {
  const branch = flag("--head")
  console.log(JSON.stringify(state.prs.filter((p) => branch === undefined || p.headRefName === branch).map((p) => ({ number: p.number, state: p.state }))))
} else if (verb === "create") {
  const branch = flag("--head")
  if (head(branch) === null) { console.error("branch " + branch + " is not on the remote"); process.exit(1) }
  const pr = { number: state.prs.length + 1, headRefName: branch, state: "OPEN", mergeCommit: null, reviews: [], comments: [] }
  state.prs.push(pr); state.log.push("create"); save()
  console.log("https://forge.invalid/pull/" + pr.number)
} else if (verb === "view") {
  console.log(JSON.stringify(view(find(target))))
} else if (verb === "review") {
  const pr = find(target); pr.reviews.push({ state: "APPROVED", commit: head(pr.headRefName) }); state.log.push("review"); save()
} else if (verb === "checks") {
  find(target); console.log("build\\tpass\\t12s")
} else if (verb === "merge") {
  const pr = find(target)
  if (pr.state === "MERGED") { console.error("pull request " + target + " is already merged"); process.exit(1) }
  const oid = head(pr.headRefName)
  execFileSync("git", ["--git-dir", remote, "update-ref", "refs/heads/main", oid])
  pr.state = "MERGED"; pr.mergeCommit = { oid }; state.log.push("merge"); save()
} else if (verb === "comment") {
  const pr = find(target); pr.comments.push({ body: flag("--body") }); state.log.push("comment"); save()
} else { console.error("fake gh: unsupported " + args.join(" ")); process.exit(2) }
`

const git = (cwd: string, ...args: ReadonlyArray<string>) =>
  execFileSync("git", [...args], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim()

/** Set up the bare remote, the work repository (in `repo`, with one commit on main) and the fake gh. */
export const createForge = (root: string, repo: string): Forge => {
  const remote = join(root, "remote.git")
  const bin = join(root, "bin")
  const stateFile = join(root, "gh-state.json")
  const pushLog = join(root, "pushes.log")
  mkdirSync(bin, { recursive: true })
  mkdirSync(repo, { recursive: true })
  execFileSync("git", ["init", "-q", "--bare", "-b", "main", remote])
  const hook = join(remote, "hooks", "post-receive")
  writeFileSync(hook, `#!/bin/sh\ncat >> "${pushLog}"\n`)
  chmodSync(hook, 0o755)
  git(repo, "init", "-q", "-b", "main")
  git(repo, "config", "user.email", "model@example.invalid")
  git(repo, "config", "user.name", "Scripted Model")
  git(repo, "config", "commit.gpgsign", "false")
  writeFileSync(join(repo, "README.md"), "# demo\n")
  git(repo, "add", "README.md")
  git(repo, "commit", "-qm", "initial")
  git(repo, "remote", "add", "origin", remote)
  git(repo, "push", "-q", "origin", "main")
  writeFileSync(pushLog, "")
  writeFileSync(join(bin, "gh"), GH)
  chmodSync(join(bin, "gh"), 0o755)
  const state = (): ForgeState =>
    existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, "utf8")) as ForgeState) : { prs: [], log: [] }
  return {
    repo,
    remote,
    bin,
    env: { PATH: `${bin}:${process.env.PATH ?? ""}`, FAKE_GH_STATE: stateFile, FAKE_GH_REMOTE: remote },
    pushes: () =>
      readFileSync(pushLog, "utf8")
        .split("\n")
        .filter((line) => line.length > 0),
    ghLog: () => state().log,
    state,
    commitsOnWork: () => Number(git(repo, "rev-list", "--count", "main..work"))
  }
}
