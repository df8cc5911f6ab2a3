/**
 * Workflows shipped with the package, registered before project files. A project file that
 * reuses a built-in name is reported as a load error and the built-in stays. Each built-in
 * carries a revision; a run started on another revision (or another build of the same one)
 * refuses to resume and asks for a Pi reload.
 */
import type { WrappedEntry } from "../engine/registry.ts"
import { makeAutoimplement } from "./autoimplement.ts"
import { runCommand, makeMonitor } from "./monitor.ts"

export const BUILTIN_ORIGIN = "built-in"

export const builtinWorkflows: ReadonlyArray<WrappedEntry> = [
  { definition: makeAutoimplement({ run: runCommand }), origin: BUILTIN_ORIGIN },
  { definition: makeMonitor({ run: runCommand }), origin: BUILTIN_ORIGIN }
]
