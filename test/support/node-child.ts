/**
 * Run a Node child process on this package's TypeScript sources. Node 22.19+ strips types
 * natively; the flag keeps older 22.x lines working and is a no-op on newer ones.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process"
import type { Readable, Writable } from "node:stream"

export const NODE_TS_ARGS: ReadonlyArray<string> = ["--experimental-strip-types", "--no-warnings"]

export type NodeChild = ChildProcessByStdio<Writable, Readable, Readable>

/** Spawn `process.execPath` (the Node running the tests) on a script. */
export const spawnNode = (script: string, args: ReadonlyArray<string>, cwd: string): NodeChild =>
  spawn(process.execPath, [...NODE_TS_ARGS, script, ...args], {
    cwd,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_OPTIONS: "" }
  })

export interface ChildResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Collect a child's output until it exits. */
export const collect = (child: NodeChild): Promise<ChildResult> =>
  new Promise((resolve, reject) => {
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.on("error", reject)
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })

/** Run a script to completion with `input` on stdin. */
export const runNode = (script: string, args: ReadonlyArray<string>, cwd: string, input = "") => {
  const child = spawnNode(script, args, cwd)
  const result = collect(child)
  child.stdin.end(input)
  return result
}
