/**
 * Workflows shipped with the package, registered before project files. A project file that
 * reuses a built-in name is reported as a load error and the built-in stays.
 */
import type { WrappedEntry } from "../engine/registry.ts"

export const builtinWorkflows: ReadonlyArray<WrappedEntry> = []
