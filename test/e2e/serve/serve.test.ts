/**
 * `pi-workflow-turns serve` in a real browser (puppeteer-core driving Debian's chromium) on the
 * database a real Pi session writes: a run whose agent step the scripted model submits, then a
 * waiting checkpoint, then (after the user's answer) a compute step that fails with a GitHub
 * token in its error. The list shows the run; the timeline's bars are the stored steps in order
 * with their outcomes (read through the stores); the open page follows the run live, without a
 * reload, from waiting to failed; a request without the token and one under a foreign host name
 * (DNS rebinding, through chromium's host resolver) are refused; the token is in the database but
 * never in the page. Screenshots go to docs/images/ with PWT_SCREENSHOTS=1, else to a temp dir.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Option } from "effect"
import puppeteer, { type Browser, type Page } from "puppeteer-core"
import { afterAll, describe, expect, it } from "vitest"
import { Database } from "../../../src/store/database.ts"
import { RunStore, type StepRecord } from "../../../src/store/run-store.ts"
import * as RunStoreSql from "../../../src/store/run-store-sql.ts"
import { type Served, startServe } from "../../serve/serve-process.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { start, submit } from "../extension/scenario.ts"
import { startScenario } from "../extension/support.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..")
const SECRET = `ghp_${"S3rv3T0k3n".repeat(3)}Zq9Wx8`
const shots =
  process.env.PWT_SCREENSHOTS === "1"
    ? join(ROOT, "docs", "images")
    : mkdtempSync(join(tmpdir(), "pwt-shots-"))
mkdirSync(shots, { recursive: true })

const RELEASE = `export default {
  name: "release",
  description: "Prepare the notes, ask, publish",
  startAt: "prepare",
  nodes: {
    prepare: { type: "agent", prompt: "Prepare the release notes and answer {\\"ready\\": true}.", timeoutMs: 600000 },
    ask: { type: "wait", prompt: "Ship release 3.0 now? Answer yes or no." },
    publish: {
      type: "compute",
      run: ({ outputs }) => {
        if (outputs.ask.answer !== "yes") throw new Error("push refused: GITHUB_TOKEN=${SECRET} is not allowed to publish")
        return { published: true }
      }
    }
  },
  edges: [{ from: "prepare", to: "ask" }, { from: "ask", to: "publish" }]
}
`

const cleanups: Array<() => Promise<unknown> | unknown> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** The run's steps and open wait, read through the stores (read-only, as the CLI opens it). */
const stored = (filename: string, runId: string) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const runs = yield* RunStore
        const run = Option.getOrThrow(yield* runs.get(runId))
        return { run, steps: yield* runs.steps(runId) }
      }).pipe(
        Effect.provide(
          RunStoreSql.layer.pipe(
            Layer.provideMerge(Database.layer({ filename, readonly: true, busyTimeoutMs: 1_000 }))
          )
        )
      )
    )
  )

/** What the page must show for a stored step: its outcome, `waiting` at an open checkpoint. */
const expectedOutcome = (step: StepRecord, waiting: boolean): string =>
  step.outcome ?? (step.interrupted !== null ? "interrupted" : waiting ? "waiting" : "in flight")

/** The timeline's step rows as `seq:node:outcome`, top to bottom. */
const bars = (page: Page) =>
  page.$$eval(".row[data-seq]", (rows) =>
    rows.map(
      (row) =>
        `${row.getAttribute("data-seq")}:${row.getAttribute("data-node")}:${row.getAttribute("data-outcome")}`
    )
  )

const openBrowser = async (): Promise<Browser> => {
  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    // A foreign name that resolves to the server's address: a DNS-rebinding page.
    args: ["--no-sandbox", "--host-resolver-rules=MAP rebind.example 127.0.0.1"]
  })
  cleanups.push(() => browser.close())
  return browser
}

describe("serve in a browser, on a real Pi session's database", () => {
  it("lists the run, draws its steps as stored, follows it live and shows no secret", async () => {
    const lab = await startScenario({
      workflows: { "release.workflow.mjs": RELEASE },
      script: [
        start("release"),
        { text: "The release run is queued." },
        submit({ ready: true }),
        { text: "The notes are ready." },
        { text: "I will let you answer the release question." },
        { text: "The release was not published." }
      ]
    })
    await lab.say("Run the release workflow.", {
      until: () => lab.runIn("waiting") && lab.mock.requestCount() === 5,
      label: "the run waits at its checkpoint"
    })
    const runId = String(lab.runs()[0]?.runId)
    const dir = mkdtempSync(join(tmpdir(), "pwt-serve-e2e-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const served: Served = await startServe(lab.dbPath, dir)
    cleanups.push(() => served.child.kill("SIGKILL"))

    const browser = await openBrowser()
    const page = await browser.newPage()
    await page.setViewport({ width: 1280, height: 720 })
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(String(error)))

    // Refused: no token; the right token under a foreign host name.
    expect((await page.goto(`${served.base}/`))?.status()).toBe(401)
    expect((await page.goto(`http://rebind.example:${served.port}/?token=${served.token}`))?.status()).toBe(
      403
    )

    // The list shows the run, waiting for an answer.
    expect((await page.goto(served.url))?.status()).toBe(200)
    await page.waitForSelector(`tr[data-run="${runId}"]`)
    expect(await page.$eval(`tr[data-run="${runId}"] .c`, (cell) => cell.textContent)).toBe(
      "waiting for an answer"
    )
    await page.screenshot({ path: join(shots, "serve-runs.png") })

    // The timeline: the stored steps in order, with their outcomes.
    await page.click(`tr[data-run="${runId}"] a`)
    await page.waitForSelector('.row[data-node="ask"]')
    const waiting = await stored(lab.dbPath, runId)
    expect(waiting.run.waitRequestId).not.toBeNull()
    const asStored = (steps: ReadonlyArray<StepRecord>, open: boolean) =>
      steps.map(
        (step, i) => `${step.seq}:${step.nodeId}:${expectedOutcome(step, open && i === steps.length - 1)}`
      )
    expect(await bars(page)).toEqual(asStored(waiting.steps, true))
    expect(await bars(page)).toEqual(["1:prepare:ok", "2:ask:waiting"])
    expect(await page.$eval("#live", (badge) => badge.textContent)).toBe("live")
    const url = page.url()
    let loads = 0
    page.on("load", () => {
      loads += 1
    })

    // The user answers in Pi: the open page follows, without a reload, to the failed run.
    await lab.say(`/workflow answer ${runId} no`, {
      until: () => lab.runIn("failed"),
      label: "the run failed",
      requireSettle: false
    })
    const started = performance.now()
    await page.waitForSelector('.row[data-node="publish"][data-outcome="failed"]', { timeout: 5_000 })
    expect(performance.now() - started).toBeLessThan(5_000)
    expect([page.url(), loads]).toEqual([url, 0])
    const ended = await stored(lab.dbPath, runId)
    expect(await bars(page)).toEqual(asStored(ended.steps, false))
    expect(await bars(page)).toEqual(["1:prepare:ok", "2:ask:ok", "3:publish:failed"])
    await page.waitForSelector("dl .c.failed")
    // Each visit names the process that ran it: Pi's, as stored (one runner, so no takeover).
    const runners = ended.steps.map((step) => step.runner)
    expect(runners.every((runner) => runner !== null && runner.pid !== process.pid)).toBe(true)
    const info = await page.$$eval(".row[data-seq] small", (cells) =>
      cells.map((cell) => cell.textContent ?? "")
    )
    expect(info.map((text) => text.split(" · ").at(-1))).toEqual(
      runners.map((runner) => `on ${runner?.host} pid ${runner?.pid}`)
    )
    expect(await page.$$(".row[data-taken-over]")).toHaveLength(0)
    expect(await page.$eval("#live", (badge) => badge.textContent)).toBe("")
    await page.screenshot({ path: join(shots, "serve-timeline.png"), fullPage: true })

    // The token is in the database (the store keeps what the workflow wrote), never in the page.
    const errorsStored = peekRows(lab.dbPath, "workflow_steps").map((row) => String(row.error))
    expect(errorsStored.some((text) => text.includes(SECRET))).toBe(true)
    const content = await page.content()
    expect(content).toContain("GITHUB_TOKEN=[REDACTED]")
    expect(content).not.toContain(SECRET)
    expect(errors).toEqual([])
    expect(await served.stop()).toBe(0)
  }, 120_000)
})
