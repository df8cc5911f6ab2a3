/**
 * The package as a downstream Effect program sees it: the packed tarball installed into a fresh
 * project with its own `effect` (examples/downstream), type-checked by a strict NodeNext tsc with
 * `skipLibCheck: false`, and its example program run. One copy of `effect` only: the library
 * must use the consumer's.
 */
import { execFile } from "node:child_process"
import { copyFileSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { promisify } from "node:util"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConsumerProject,
  installConsumer,
  installedCopies,
  type PackedPackage,
  packPackage,
  ROOT
} from "./package.ts"

const EXAMPLE = join(ROOT, "examples", "downstream")
/** The packed tarball's budget (issue 14). */
const MAX_PACKED_BYTES = 1024 * 1024
/** tsc and npm under a loaded machine take a while; these are not timing assertions. */
const SLOW = 240_000

const ExamplePackage = Schema.Struct({
  dependencies: Schema.Record({ key: Schema.String, value: Schema.String })
})

let packed: PackedPackage | undefined
let consumer: ConsumerProject | undefined
beforeAll(async () => {
  packed = await packPackage()
  const { dependencies } = Schema.decodeUnknownSync(Schema.parseJson(ExamplePackage))(
    readFileSync(join(EXAMPLE, "package.json"), "utf8")
  )
  const { "pi-workflow-turns": _self, ...own } = dependencies
  consumer = await installConsumer(packed.tarball, { dependencies: own })
  for (const file of ["tsconfig.json", "program.ts"])
    copyFileSync(join(EXAMPLE, file), join(consumer.dir, file))
}, 2 * SLOW)
afterAll(() => {
  consumer?.remove()
  packed?.remove()
})

const project = (): ConsumerProject => {
  if (consumer === undefined) throw new Error("consumer project not installed")
  return consumer
}

const exec = promisify(execFile)

/** Run Node in the consumer project; async so the test worker stays responsive meanwhile. */
const run = async (args: ReadonlyArray<string>): Promise<{ readonly code: number; readonly out: string }> => {
  try {
    const { stdout, stderr } = await exec(process.execPath, [...args], { cwd: project().dir })
    return { code: 0, out: `${stdout}${stderr}` }
  } catch (error) {
    const field = (key: string) =>
      typeof error === "object" && error !== null && key in error ? String(Reflect.get(error, key)) : ""
    return { code: 1, out: `${field("stdout")}\n${field("stderr")}` }
  }
}

describe("the packed package, installed downstream", () => {
  it("packs to at most 1 MB, with declarations for every library entry and no Pi or Effect inside them", () => {
    const files = packed?.files ?? []
    expect(packed?.packedBytes).toBeLessThanOrEqual(MAX_PACKED_BYTES)
    for (const entry of [
      "dist/index.js",
      "dist/index.d.ts",
      "dist/testing.js",
      "dist/testing.d.ts",
      "dist/extension.js"
    ]) {
      expect(files).toContain(entry)
    }
    const index = readFileSync(join(project().packageDir, "dist", "index.js"), "utf8")
    expect(index).not.toContain("Effect.gen = ") // a bundled Effect would define it here
    expect(files.filter((file) => file.includes("node_modules"))).toEqual([])
  })

  it(
    "type-checks under strict NodeNext with skipLibCheck: false, with 0 errors",
    async () => {
      const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
      const result = await run([tsc, "-p", "tsconfig.json"])
      expect(result.out.trim()).toBe("")
      expect(result.code).toBe(0)
    },
    SLOW
  )

  it("has one copy of effect, and the library resolves the consumer's", () => {
    expect(installedCopies(project().dir, "effect")).toHaveLength(1)
    const fromConsumer = createRequire(join(project().dir, "package.json")).resolve("effect")
    const fromLibrary = createRequire(join(project().packageDir, "package.json")).resolve("effect")
    expect(fromLibrary).toBe(fromConsumer)
  })

  it("installs no Pi package for a library user", () => {
    expect(installedCopies(project().dir, "@earendil-works/pi-coding-agent")).toEqual([])
    expect(installedCopies(project().dir, "@earendil-works/pi-ai")).toEqual([])
  })

  it(
    "runs the example program: one fallback turn under TestClock",
    async () => {
      const result = await run(["program.ts"])
      expect(result.out).toContain("fallbacks after the pass: 1, carrying the intent: true")
      expect(result.out).toContain("ok: exactly one successor turn")
      expect(result.code).toBe(0)
    },
    SLOW
  )
})
