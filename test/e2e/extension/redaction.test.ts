/**
 * Real Pi: a run fails with credentials in its error (a token in an environment dump and an
 * Authorization header, and the other common shapes). The fallback's reason, the terminal
 * decision block, the status replies and notices, the session file and the operator CLI show
 * none of them; the stored run keeps the error as the workflow wrote it.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { runCli } from "../../cli/cli-support.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { messageText } from "./lab.ts"
import { start } from "./scenario.ts"
import { startScenario } from "./support.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..")
const BIN = join(ROOT, JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).bin["pi-workflow-turns"])

const GITHUB = "ghp_R3dact10nTestT0kenAbCdEfGhIjKlMnOpQr"
/** Each secret and the way it sits in the error text. */
const SECRETS: ReadonlyArray<readonly [string, string]> = [
  [GITHUB, `GITHUB_TOKEN=${GITHUB}`],
  [GITHUB, `Authorization: Bearer ${GITHUB}`],
  ["sk_live_51Hd3ZqLkTestRedactionKey00aBcD", "stripe sk_live_51Hd3ZqLkTestRedactionKey00aBcD"],
  ["npm_Re4ctT0kenForRedactionTests0123456789", "npm_Re4ctT0kenForRedactionTests0123456789"],
  ["glpat-Rx7yRedactionTest9zQw", "glpat-Rx7yRedactionTest9zQw"],
  ["Zx8qLw3Ty7Ub2Nc5Vm9Kd4Rf6Hg1Js0Pa3Qe7WtY", "aws secret Zx8qLw3Ty7Ub2Nc5Vm9Kd4Rf6Hg1Js0Pa3Qe7WtY"],
  ["xoxb-123456789012-R3dactSlackT0ken", "xoxb-123456789012-R3dactSlackT0ken"],
  [
    "T0R3D4CT/B0R3D4CT/W3bh00kS3cr3tV4lu3",
    "https://hooks.slack.com/services/T0R3D4CT/B0R3D4CT/W3bh00kS3cr3tV4lu3"
  ],
  ["Mysq1Pa55word", "mysql -u deploy -pMysq1Pa55word app"],
  ["Cl1Pa55word", "--password Cl1Pa55word"],
  ["Ur1Pa55word", "https://deploy:Ur1Pa55word@git.example.invalid/app.git"]
]
const ERROR = `push failed: ${SECRETS.map(([, carrier]) => carrier).join(" ; ")}`

const LEAKY = `export default {
  name: "leaky",
  startAt: "push",
  nodes: { push: { type: "compute", run: () => { throw new Error(${JSON.stringify(ERROR)}) } } },
  edges: []
}
`

const expectClean = (what: string, text: string) => {
  for (const [secret] of SECRETS) expect(text, `${what} carries ${secret}`).not.toContain(secret)
}

describe("credentials in a run's error, in real Pi", () => {
  it("reach no model request, no session entry, no notice and no CLI output", async () => {
    const lab = await startScenario({
      workflows: { "leaky.workflow.mjs": LEAKY },
      script: [
        start("leaky"),
        { text: "The run is queued." },
        // The terminal turn: the model asks for the run's status, then stops.
        (request) => {
          const match = /- run: (\S+)/.exec(messageText(request.messages.at(-1)))
          return {
            toolCalls: [{ name: "workflow", arguments: { action: "status", runId: match?.[1] ?? "?" } }]
          }
        },
        { text: "The push failed; stopping." }
      ]
    })
    await lab.say("Push the release with the leaky workflow.", {
      until: () => lab.mock.requestCount() >= 4,
      label: "the terminal turn and its status call"
    })
    const [run] = lab.runs()
    expect(run?.state).toBe("failed")
    const runId = run?.runId ?? ""
    await lab.say(`/workflow status ${runId}`, { requireSettle: false })

    // What the model got: the terminal message with its decision block, and the status reply.
    const requests = JSON.stringify(lab.mock.requests())
    expect(requests).toContain("Decide what happens next")
    expect(requests).toContain("GITHUB_TOKEN=[REDACTED] ; Authorization: Bearer [REDACTED]")
    expectClean("the model's requests", requests)
    expectClean("the session file", readFileSync(lab.sessionFile, "utf8"))
    const observed = lab.observe()
    // The status reply stays above the editor (a widget), not a replaceable notice.
    expect(observed.panels.join("\n")).toContain(`Run ${runId} of leaky`)
    expectClean("Pi's events (tool results, notices)", JSON.stringify(lab.pi.events()))

    for (const args of [["show", runId], ["show", runId, "--json"], ["runs", "--wide"], ["doctor"]]) {
      const shown = await runCli(BIN, lab.sandbox.workDir, [...args, "--db", lab.dbPath])
      expect(shown.stdout + shown.stderr).toContain(args[0] === "doctor" ? "database" : runId)
      expectClean(`pi-workflow-turns ${args.join(" ")}`, shown.stdout + shown.stderr)
    }

    // The stored run keeps what the workflow wrote.
    const stored = JSON.stringify(
      peekRows(lab.dbPath, "workflow_runs", { where: "run_id = ?", params: [runId] })
    )
    expect(stored).toContain(GITHUB)
  }, 60_000)
})
