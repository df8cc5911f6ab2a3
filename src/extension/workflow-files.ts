/**
 * Discovery of project workflow files: `<cwd>/.pi/workflows/*.workflow.{ts,mjs,js}`. Each file
 * is imported on its own; a broken file yields an error naming it and never stops the others.
 * Type stripping of `.ts` files is Node's own (Node ≥ 22.18), so workflow files need no build.
 */
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { LoadedFile } from "../app/workflow-file.ts"

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
    return { _tag: "LoadError", file, message: `cannot load ${file}: ${describe(error)}` }
  }
}

export const loadWorkflowFiles = (cwd: string): Promise<ReadonlyArray<LoadedFile>> =>
  Promise.all(listWorkflowFiles(cwd).map(loadWorkflowFile))
