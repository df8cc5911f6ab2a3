/** Run IDs: sortable by creation time, readable (workflow slug) and unique (random suffix). */
import { Effect } from "effect"
import { newId } from "./active-run.ts"

export const runIdOf = (name: string, now: number) =>
  Effect.map(newId("x"), (id) => {
    const stamp = new Date(now)
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d+Z$/, "Z")
    const slug = name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .slice(0, 64)
    return `${stamp}-${slug}-${id.slice(2, 10)}`
  })
