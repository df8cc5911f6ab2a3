/**
 * One application process for the two-process claim-transfer test (spawned by
 * claim-transfer-race.test.ts, never run by vitest): the whole application graph (`App.layer`)
 * over one SQLite file and a fake Pi session for one session ID, driven by JSON-line commands
 * on stdin and answering each with one JSON line on stdout. The only workflow, `handoff`, has
 * one agent step whose prompt can be held at a gate and then built or made to throw, so the
 * parent can make this process's rerun of the step fail before prompting, or prompt.
 */
import { createInterface } from "node:readline"
import { Effect, Layer } from "effect"
import { runCommand } from "../../src/app/command.ts"
import * as App from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { decodeCommand, type WorkerCommand } from "./app-protocol.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

const [dbPath = "", leaseArg = "60000", renewArg = "20000"] = process.argv.slice(2)

/** The prompt gate: null builds the prompt at once. */
let gate: {
  readonly wait: Promise<"prompt" | "throw">
  readonly open: (how: "prompt" | "throw") => void
} | null = null

const flow = {
  name: "handoff",
  startAt: "ask",
  nodes: {
    ask: {
      type: "agent",
      timeoutMs: 600_000,
      prompt: () => {
        if (gate === null) return "answer"
        return gate.wait.then((how) => {
          if (how === "throw") throw new Error("the prompt could not be built")
          return "answer"
        })
      }
    }
  },
  edges: []
}

const app = App.layer({
  database: { filename: dbPath },
  workflows: [flow],
  engine: { leaseMs: Number(leaseArg), renewEveryMs: Number(renewArg) }
}).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))

const answer = (id: number, value: unknown) =>
  Effect.sync(() => process.stdout.write(`${JSON.stringify({ id, value })}\n`))

const handle = (command: WorkerCommand) =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const fake = yield* PiSessionFake
    switch (command._tag) {
      case "start":
        return command.origin === "tool"
          ? yield* runTool({ _tag: "start", workflow: "handoff", input: {} })
          : yield* runCommand({ _tag: "start", workflow: "handoff", input: {} })
      case "activate":
        return yield* Effect.either(engine.activate("s1"))
      case "resume":
        return yield* Effect.either(engine.resume(command.runId))
      case "hold":
        gate = (() => {
          let open: (how: "prompt" | "throw") => void = () => undefined
          const wait = new Promise<"prompt" | "throw">((resolve) => {
            open = resolve
          })
          return { wait, open }
        })()
        return null
      case "release": {
        const held = gate
        gate = null
        held?.open(command.how)
        return null
      }
      case "submit": {
        const steps = (yield* fake.branch).filter((m) => m.customType === "pi-workflows-agent-step")
        const details = steps.at(-1)?.details
        const requestId =
          typeof details === "object" && details !== null && "requestId" in details
            ? String(details.requestId)
            : ""
        return yield* runTool({ _tag: "submit", requestId, output: { done: true } })
      }
      case "userCancel":
        return yield* runCommand({ _tag: "cancel", runId: command.runId })
      case "settle": {
        // Pi's agent_settled: the turn ends (aborted or not), then both hook halves run.
        yield* fake.settle({ aborted: command.aborted })
        const { userHold } = yield* classifySettle(command.aborted)
        yield* afterSettle(userHold)
        return userHold
      }
      case "sessionStart":
        return yield* onSessionStart
      case "run":
        return yield* Effect.map(Effect.either((yield* RunStore).get(command.runId)), (found) =>
          found._tag === "Right" && found.right._tag === "Some" ? found.right.value.state : null
        )
      case "observe":
        return {
          aborts: yield* fake.aborts,
          phase: yield* fake.phase,
          branch: yield* fake.branch,
          notifications: yield* fake.notifications
        }
    }
  })

const program = Effect.gen(function* () {
  const context = yield* Layer.build(app)
  const lines = createInterface({ input: process.stdin })
  yield* answer(0, "ready")
  yield* Effect.async<void>((resume) => {
    lines.on("line", (line) => {
      const command = decodeCommand(line)
      // Each command runs on its own fiber: a long one (a held prompt) never blocks the next.
      Effect.runFork(
        handle(command).pipe(
          Effect.flatMap((value) => answer(command.id, value)),
          Effect.provide(context),
          Effect.catchAllDefect((defect) => answer(command.id, { defect: String(defect) }))
        )
      )
    })
    lines.on("close", () => resume(Effect.void))
  })
}).pipe(Effect.scoped)

Effect.runPromise(program).catch((error: unknown) => {
  process.stderr.write(`app worker failed: ${String(error)}\n`)
  process.exitCode = 1
})
