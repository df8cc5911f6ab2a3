/**
 * Discovery of project workflow files: `<cwd>/.pi/workflows/*.workflow.{ts,mjs,js}`. Each file
 * is imported on its own; a broken file yields an error naming it and never stops the others.
 * Type stripping of `.ts` files is Node's own (Node ≥ 22.18), so workflow files need no build.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { LoadedFile } from "../app/workflows.ts"

export const WORKFLOW_FILE = /\.workflow\.(ts|mjs|js)$/

export type { LoadedFile }

export const workflowDir = (cwd: string): string => join(cwd, ".pi", "workflows")

/** Workflow files in the project's workflow directory, sorted; none when it does not exist. */
export const listWorkflowFiles = (cwd: string): ReadonlyArray<string> => {
  const dir = workflowDir(cwd)
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  return names
    .filter((name) => WORKFLOW_FILE.test(name))
    .sort()
    .map((name) => join(dir, name))
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : `non-error thrown: ${String(error)}`

/**
 * Line and column of a syntax error in `report`, a Node error report that starts with
 * `<file>:<line>`, the offending source line(s) and a caret line under the error.
 */
export const syntaxLocation = (
  file: string,
  report: string
): { readonly line: number; readonly column: number } | null => {
  const lines = report.split("\n")
  const header = lines.findIndex((l) => l.startsWith(`${file}:`) && /:\d+$/.test(l))
  if (header < 0) return null
  const line = Number(/:(\d+)$/.exec(lines[header] ?? "")?.[1])
  const caret = lines.slice(header + 1, header + 6).find((l) => /^\s*\^+\s*$/.test(l))
  return caret === undefined ? { line, column: 1 } : { line, column: caret.indexOf("^") + 1 }
}

/**
 * Where a syntax error is, if the import failed on one. Node puts the location of a TypeScript
 * syntax error in the stack, but not that of a JavaScript module, and a loader in between
 * (Pi's, a test runner's) may report it its own way: `node --check` says it plainly. It runs
 * only for a file that failed to load.
 */
const locateSyntaxError = (
  file: string,
  error: unknown
): { readonly at: string; readonly message: string } | null => {
  const stack = error instanceof Error ? (error.stack ?? "") : ""
  const fromStack = error instanceof SyntaxError ? syntaxLocation(file, stack) : null
  if (fromStack !== null)
    return {
      at: `${file}:${fromStack.line}:${fromStack.column}`,
      message: error instanceof Error ? error.message : ""
    }
  const check = spawnSync(process.execPath, ["--check", file], { encoding: "utf8", timeout: 5_000 })
  const report = `${check.stderr ?? ""}`
  const fromCheck = check.status === 0 ? null : syntaxLocation(file, report)
  if (fromCheck === null) return null
  const message = /^SyntaxError[^:]*: (.*)$/m.exec(report)?.[1] ?? "invalid syntax"
  return { at: `${file}:${fromCheck.line}:${fromCheck.column}`, message }
}

/**
 * Import one file and take its default export. The source hash lets a run refuse to resume
 * after the file changed; the query string defeats the module cache so an edited file reloads.
 */
export const loadWorkflowFile = async (file: string): Promise<LoadedFile> => {
  let source: Buffer
  try {
    source = readFileSync(file)
  } catch (error) {
    return { _tag: "LoadError", file, message: `cannot read ${file}: ${describe(error)}` }
  }
  const sourceHash = createHash("sha256").update(source).digest("hex")
  try {
    const module: unknown = await import(`${pathToFileURL(file).href}?v=${sourceHash.slice(0, 16)}`)
    const value =
      typeof module === "object" && module !== null && "default" in module ? module.default : undefined
    if (value === undefined) {
      return {
        _tag: "LoadError",
        file,
        message: `${file} has no default export (export a workflow definition)`
      }
    }
    return { _tag: "Loaded", file, value, sourceHash }
  } catch (error) {
    const syntax = locateSyntaxError(file, error)
    if (syntax !== null)
      return { _tag: "LoadError", file, message: `syntax error in ${syntax.at}: ${syntax.message}` }
    return { _tag: "LoadError", file, message: `cannot load ${file}: ${describe(error)}` }
  }
}

export const loadWorkflowFiles = (cwd: string): Promise<ReadonlyArray<LoadedFile>> =>
  Promise.all(listWorkflowFiles(cwd).map(loadWorkflowFile))
