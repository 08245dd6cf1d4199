// joule's OpenCode plugin: every tool call is put to joule's gate before it
// runs. `joule hook opencode` decides from the active grant and seals the
// decision as a receipt; this plugin only forwards the call and obeys the
// answer: it throws to deny (OpenCode has no ask from this hook) and replaces
// the arguments to rewrite. Anything that goes wrong blocks the call.
import type { Plugin } from "@opencode-ai/plugin"
import { spawn } from "node:child_process"

// joule install opencode writes the absolute path of the joule binary here,
// and of the thin hook client beside it (joule-hook) when it is installed.
const JOULE_BIN = process.env.JOULE_BIN ?? "joule"
const JOULE_HOOK = process.env.JOULE_HOOK_CLIENT ?? ""
// joule install opencode sets this to the install's containment flag: by
// default the one that makes joule rewrite the shell commands it allows to
// run under joule exec, or, for an install that opted out, the one that
// makes every receipt say they were not contained.
const MODE: string = ""
const TIMEOUT_MS = Number(process.env.JOULE_HOOK_TIMEOUT_MS) > 0 ? Number(process.env.JOULE_HOOK_TIMEOUT_MS) : 30_000

interface Answer {
  decision?: string
  reason?: string
  args?: Record<string, unknown>
}

function decide(payload: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const mode = MODE ? [MODE] : []
    const child = JOULE_HOOK
      ? spawn(JOULE_HOOK, ["opencode", ...mode], { stdio: ["pipe", "pipe", "pipe"] })
      : spawn(JOULE_BIN, ["hook", "opencode", ...mode], { stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`joule did not answer within ${TIMEOUT_MS / 1000}s; the call is blocked`))
    }, TIMEOUT_MS)
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.on("error", (err: Error) => {
      clearTimeout(timer)
      reject(new Error(`joule could not be started (${err.message}); the call is blocked`))
    })
    child.on("close", (code: number | null) => {
      clearTimeout(timer)
      try {
        resolve(JSON.parse(stdout) as Answer)
      } catch {
        reject(new Error(`joule gave no decision (exit ${code}: ${stderr.trim()}); the call is blocked`))
      }
    })
    child.stdin.end(payload)
  })
}

export const JoulePlugin: Plugin = async ({ directory, worktree }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await decide(
      JSON.stringify({ hook: "tool.execute.before", input, output: { args: output.args }, directory, worktree }),
    )
    if (answer.decision !== "allow") {
      throw new Error(answer.reason ?? "joule denied this call")
    }
    if (answer.args && typeof answer.args === "object") {
      // A rewrite replaces the arguments (contained: the command, to run
      // under joule exec): delete what is gone, set the rest. OpenCode
      // then checks its own permissions on what runs.
      for (const key of Object.keys(output.args ?? {})) delete output.args[key]
      Object.assign(output.args, answer.args)
    }
  },
})

export default JoulePlugin
