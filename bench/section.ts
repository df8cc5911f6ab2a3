/**
 * The contract between the bench entry and its sections. Each section (store ops, breakdown,
 * scaling, list index, memory, abort path, Pi delivery latency, extension start-up) is its own
 * module that returns markdown plus the checks it made, so the entry only orders, prints and
 * records them.
 */

export interface BenchContext {
  /** A directory of this run, removed at the end; sections create their databases below it. */
  readonly tempRoot: string
  /** Fewer ops per measurement (a smoke run of the bench itself, not for docs/). */
  readonly quick: boolean
  /** Extra switches from the command line (`--full` → "full"). */
  readonly options: ReadonlySet<string>
  /** Progress output (stderr), not part of the report. */
  readonly log: (line: string) => void
}

export interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

export interface SectionReport {
  /** Markdown body under the section's heading. */
  readonly markdown: string
  /** Hard checks (query plans use the partial indexes, SQL parity); a failure fails the run. */
  readonly checks: ReadonlyArray<Check>
  /** Performance goals; a miss is reported and explained, it does not fail the run. */
  readonly goals: ReadonlyArray<Check>
}

export interface BenchSection {
  readonly id: string
  readonly title: string
  readonly run: (context: BenchContext) => Promise<SectionReport>
}

export const mark = (ok: boolean): string => (ok ? "✅" : "❌")
