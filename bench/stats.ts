/** Latency statistics for the bench: nearest-rank percentiles over per-op samples in µs. */

export interface Summary {
  readonly median: number
  readonly p99: number
  readonly count: number
}

const sortedCopy = (samples: ArrayLike<number>): Float64Array => Float64Array.from(samples).sort()

/** Nearest-rank percentile (p in 0…100) of already sorted values. */
export const percentileSorted = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN
}

export const median = (values: ArrayLike<number>): number => {
  const sorted = sortedCopy(values)
  const n = sorted.length
  if (n === 0) return Number.NaN
  const mid = n >> 1
  return n % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

export const summarize = (samples: ArrayLike<number>): Summary => {
  const sorted = sortedCopy(samples)
  return { median: median(sorted), p99: percentileSorted(sorted, 99), count: sorted.length }
}

/** Combine rounds: the median of the per-round medians and of the per-round p99s. */
export const combineRounds = (rounds: ReadonlyArray<Summary>): Summary => ({
  median: median(rounds.map((r) => r.median)),
  p99: median(rounds.map((r) => r.p99)),
  count: rounds.reduce((sum, r) => sum + r.count, 0)
})

/** µs with precision that suits the magnitude. */
export const us = (value: number): string =>
  !Number.isFinite(value)
    ? "—"
    : value >= 1000
      ? value.toFixed(0)
      : value >= 100
        ? value.toFixed(0)
        : value >= 10
          ? value.toFixed(1)
          : value.toFixed(2)

export const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "—")

/** A markdown table from a header row and body rows. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")
