/** Durations and times as people read them: `3m 20s`, `5m ago`, `in 30s`. Pure. */

const units: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "m"],
  [1_000, "s"]
]

/** A duration in its largest unit, plus the next one while the first is below 10: `45s`, `3m 20s`, `12h`. */
export const duration = (millis: number): string => {
  const ms = Math.max(0, Math.round(millis))
  const index = units.findIndex(([size]) => ms >= size)
  const unit = units[index]
  if (unit === undefined) return `${ms}ms`
  const count = Math.floor(ms / unit[0])
  const next = units[index + 1]
  if (next === undefined || count >= 10) return `${count}${unit[1]}`
  const rest = Math.floor((ms - count * unit[0]) / next[0])
  return rest === 0 ? `${count}${unit[1]}` : `${count}${unit[1]} ${rest}${next[1]}`
}

/** `5m ago`, `in 30s`, or `-` for no time; an unparsable stamp is shown as stored. */
export const relative = (now: number, at: string | number | null): string => {
  if (at === null) return "-"
  const millis = typeof at === "number" ? at : Date.parse(at)
  if (Number.isNaN(millis)) return String(at)
  const delta = now - millis
  if (Math.abs(delta) < 1_000) return "now"
  return delta > 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`
}
