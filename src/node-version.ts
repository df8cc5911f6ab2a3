/**
 * The Node.js this package needs (Pi 1.x needs the same). Every entry point checks it before it
 * loads anything else: on an older Node the native SQLite addon fails to load with advice
 * (`npm rebuild`) that would break it for the Node 22 that Pi runs on, so the user gets one
 * line saying what to run instead. Pure.
 */
export const MINIMUM_NODE = "22.19"

const [MIN_MAJOR, MIN_MINOR] = MINIMUM_NODE.split(".").map(Number) as [number, number]

/** Whether `version` (as in `process.versions.node`) is at least MINIMUM_NODE. */
export const isSupportedNode = (version: string): boolean => {
  const [major = Number.NaN, minor = Number.NaN] = version.split(".").map(Number)
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return false
  return major > MIN_MAJOR || (major === MIN_MAJOR && minor >= MIN_MINOR)
}

/** The one line to print when `what` runs on an unsupported Node, or null when it is fine. */
export const nodeVersionProblem = (version: string, what: string): string | null =>
  isSupportedNode(version)
    ? null
    : `${what} needs Node.js >= ${MINIMUM_NODE} (this is ${version}): select Node 22 first, ` +
      `e.g. eval "$(bash scripts/node22-env.sh)" in the pi-workflow-turns clone, then run it again.`
