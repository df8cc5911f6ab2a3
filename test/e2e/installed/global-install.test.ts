/**
 * The README's way onto a machine whose Node is older than 22.19: the node22-env line, then a
 * global install of the packed tarball, then the command by name. npm's default global prefix
 * under the private Node is the Node package's own folder, whose bin/ is not on PATH, so this
 * only works because the line also sets npm's prefix. The private Node here is this test's own
 * Node (linked into a temp prefix, so nothing is downloaded) behind a stand-in old `node`.
 */
import { execFile } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { npmEnv, type PackedPackage, packPackage, provideNativeAddon, ROOT } from "./package.ts"

const run = promisify(execFile)

let packed: PackedPackage | undefined
beforeAll(async () => {
  packed = await packPackage()
}, 120_000)
afterAll(() => packed?.remove())

/** The directory of the `npm` this test's PATH finds (the machine's npm client). */
const npmDir = async (): Promise<string> =>
  dirname((await run("bash", ["-c", "command -v npm"])).stdout.trim())

describe("a global install after the node22-env line", () => {
  it("puts pi-workflow-turns on PATH, and it runs", async () => {
    const home = mkdtempSync(join(tmpdir(), "pwt-global-"))
    try {
      const prefix = join(home, "node22")
      mkdirSync(join(prefix, "bin"), { recursive: true })
      symlinkSync(process.execPath, join(prefix, "bin", "node"))
      // The shell's own `node` is old: the line must select the private one.
      mkdirSync(join(home, "oldbin"))
      writeFileSync(join(home, "oldbin", "node"), "#!/bin/sh\necho 20.20.2\n")
      chmodSync(join(home, "oldbin", "node"), 0o755)
      const db = join(home, "controller.db")
      const script = [
        `eval "$(bash ${JSON.stringify(join(ROOT, "scripts", "node22-env.sh"))})"`,
        `npm install -g ${JSON.stringify(packed?.tarball ?? "")} >/dev/null`,
        "command -v pi-workflow-turns",
        "pi-workflow-turns --version"
      ].join(" && ")
      const env = npmEnv({
        HOME: home,
        NODE22_PREFIX: prefix,
        PATH: [join(home, "oldbin"), await npmDir(), "/usr/bin", "/bin"].join(delimiter)
      })
      // The line's own exports decide the prefix; none may come from the test's environment.
      delete env.npm_config_prefix
      delete env.npm_config_global_prefix
      const { stdout } = await run("bash", ["-c", script], { env, maxBuffer: 16 * 1024 * 1024 })
      const [where, version] = stdout.trim().split("\n")
      expect(where).toBe(join(prefix, "bin", "pi-workflow-turns"))
      expect(version?.trim()).toBe("0.1.0")
      // It is the real CLI: with the addon this checkout built, it opens and explains a database.
      provideNativeAddon(join(prefix, "lib"))
      const doctor = await run(
        "bash",
        ["-c", `pi-workflow-turns doctor --db ${JSON.stringify(db)}; echo "exit $?"`],
        {
          env: { ...env, PATH: [join(prefix, "bin"), env.PATH].join(delimiter) }
        }
      )
      expect(doctor.stdout + doctor.stderr).toContain("no controller database")
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
