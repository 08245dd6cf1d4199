// joule.ts: what the extension does with the joule binary, kept apart from
// the VS Code API so that it is tested against the real binary
// (src/test/joule.test.ts) as well as compiled against @types/vscode.
import { spawn } from "node:child_process";

export interface Options {
  path: string; // the joule binary
  home?: string; // JOULE_HOME, when set
  session: string;
}

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function env(o: Options): NodeJS.ProcessEnv {
  const e = { ...process.env };
  if (o.home) e.JOULE_HOME = o.home;
  return e;
}

// run runs joule with args and input on stdin.
export function run(o: Options, args: string[], input = "", cwd?: string): Promise<Result> {
  return new Promise((resolve) => {
    const p = spawn(o.path, args, { env: env(o), cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    p.stdout.on("data", (b) => (stdout += b));
    p.stderr.on("data", (b) => (stderr += b));
    p.on("error", (err) => resolve({ code: -1, stdout, stderr: stderr + String(err) }));
    p.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    p.stdin.end(input);
  });
}

// Disclosure is what the status bar's tooltip and every figure say: an
// extension sees only what passes through joule (JouleHook §7).
export const Disclosure =
  "joule sees what passes through it: its own gated tool, the joule MCP server, and model calls sent through joule proxy. " +
  "VS Code's own agent and its tokens are invisible to an extension; they are metered only where its model traffic goes through joule proxy " +
  "or its telemetry to joule otel (observed, not enforced).";

export interface Status {
  text: string; // for the status bar
  tooltip: string;
  ok: boolean;
}

// statusOf turns `joule statusline`'s line into the status bar's text.
export function statusOf(line: string): Status {
  line = line.trim();
  const body = line.startsWith("joule ⚡ ") ? line.slice("joule ⚡ ".length) : "";
  if (!body) return { text: "$(warning) joule", tooltip: line || "joule printed nothing", ok: false };
  const parts = body.split(" │ ");
  const energy = parts[0].replace(/ \(.*\)$/, "");
  return { text: `$(zap) ${energy} · ${parts.slice(1).join(" · ")}`, tooltip: `${line}\n\n${Disclosure}`, ok: true };
}

// status reads the session's figures as `joule statusline` prints them.
export async function status(o: Options): Promise<Status> {
  const r = await run(o, ["statusline"], JSON.stringify({ session_id: o.session }));
  if (r.code !== 0) return { text: "$(warning) joule", tooltip: r.stderr || r.stdout, ok: false };
  return statusOf(r.stdout);
}

export interface GateInput {
  tool: string;
  command?: string;
  file_path?: string;
}

export interface Decision {
  decision: string;
  code?: string;
  reason?: string;
  [k: string]: unknown;
}

// gate asks `joule gate` about one action, as the language-model tool
// does before the action runs. It fails closed: anything but a decision
// from joule is a deny.
export async function gate(o: Options, cwd: string, input: GateInput): Promise<Decision> {
  const toolInput: Record<string, string> = {};
  if (input.command !== undefined) toolInput.command = input.command;
  if (input.file_path !== undefined) toolInput.file_path = input.file_path;
  const ev = JSON.stringify({ session_id: o.session, tool: input.tool, input: toolInput, cwd });
  const r = await run(o, ["gate"], ev, cwd);
  try {
    const d = JSON.parse(r.stdout) as Decision;
    if (typeof d.decision === "string") return d;
  } catch {
    /* not a decision */
  }
  return { decision: "deny", code: "internal-error", reason: `joule gate did not answer (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}` };
}

// describe is the tool's answer to the model.
export function describe(d: Decision): string {
  return `joule gate: ${d.decision} (${d.code ?? "?"}): ${d.reason ?? ""}`.trim();
}

export interface UI {
  url: string;
  stop(): void;
}

// startUI starts `joule ui` on a free loopback port and returns the URL it
// printed (with its token).
export function startUI(o: Options): Promise<UI> {
  return new Promise((resolve, reject) => {
    const p = spawn(o.path, ["ui", "--addr", "127.0.0.1:0"], { env: env(o), stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    const timer = setTimeout(() => { p.kill(); reject(new Error("joule ui did not start: " + err)); }, 20000);
    p.stdout.on("data", (b) => {
      out += b;
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+/);
      if (m) { clearTimeout(timer); resolve({ url: m[0], stop: () => p.kill() }); }
    });
    p.stderr.on("data", (b) => (err += b));
    p.on("error", (e) => { clearTimeout(timer); reject(e); });
    p.on("exit", (code) => { clearTimeout(timer); reject(new Error(`joule ui exited (${code}): ${err}`)); });
  });
}

// sessionURL is the dashboard's view of one session.
export function sessionURL(ui: string, session: string): string {
  return ui + "#/session/" + encodeURIComponent(session);
}

export interface McpServer {
  label: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

// mcpServer is the joule MCP server VS Code's agent mode starts (the same
// entry a workspace's .vscode/mcp.json would hold).
export function mcpServer(o: Options, workspace: string): McpServer {
  const e: Record<string, string> = {};
  if (o.home) e.JOULE_HOME = o.home;
  return { label: "joule", command: o.path, args: ["mcp", "--workspace", workspace, "--session", o.session], env: e };
}

// about is what the "joule: What this window's joule sees" command says:
// the language-model tools the host lists for this extension, the MCP
// server it offers, and the disclosure.
export function about(tools: string[], mcp: McpServer): string {
  const t = tools.length ? `language-model tool ${tools.join(", ")} registered` : "language-model tool joule_gate NOT registered";
  return `joule: ${t}; MCP server "${mcp.label}" offered: ${[mcp.command, ...mcp.args].join(" ")}. ${Disclosure}`;
}

export interface Proxy {
  url: string; // the proxy's base URL, http://127.0.0.1:PORT
  running(): boolean; // false once the process has exited
  stop(): void;
}

// startProxy starts `joule proxy` on a free loopback port, metering under
// the extension's session, and returns the base URL it printed. With
// ollama set, both its Ollama routes and its OpenAI ones go there: Copilot
// Chat's Ollama models send /api/* and /v1/chat/completions to one base.
export function startProxy(o: Options, ollama?: string): Promise<Proxy> {
  const args = ["proxy", "--listen", "127.0.0.1:0", "--session", o.session, "--quiet"];
  if (ollama) args.push("--ollama", ollama, "--openai", ollama);
  return new Promise((resolve, reject) => {
    const p = spawn(o.path, args, { env: env(o), stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "", exited = false;
    p.on("exit", () => (exited = true));
    const timer = setTimeout(() => { p.kill(); reject(new Error("joule proxy did not start: " + err)); }, 20000);
    p.stdout.on("data", (b) => {
      out += b;
      const m = out.match(/joule proxy listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve({ url: m[1], running: () => !exited, stop: () => p.kill() }); }
    });
    p.stderr.on("data", (b) => (err += b));
    p.on("error", (e) => { clearTimeout(timer); reject(e); });
    p.on("exit", (code) => { clearTimeout(timer); reject(new Error(`joule proxy exited (${code}): ${err.trim()}`)); });
  });
}

// OllamaEndpoint is the one setting through which VS Code's chat lets a
// base URL be set for a model provider by settings: GitHub Copilot Chat's
// bring-your-own-key Ollama endpoint, a string URL to which it sends
// /api/version, /api/tags, /api/show and /v1/chat/completions
// (microsoft/vscode-copilot-chat package.json contributes.configuration
// "github.copilot.chat.byok.ollamaEndpoint", default
// http://localhost:11434; since January 2026 Copilot Chat migrates it into
// its Ollama provider's "url", src/extension/byok/vscode-node/ollamaProvider.ts).
// joule proxy serves all of those paths.
export const OllamaEndpoint = "github.copilot.chat.byok.ollamaEndpoint";

// OllamaDefault is that setting's default, Ollama's own address.
export const OllamaDefault = "http://localhost:11434";

// upstreamFor is where the proxy forwards Ollama calls: the endpoint the
// user had set, unless it is the proxy URL the extension wrote before (a
// proxy of an earlier window), in which case the upstream remembered then.
export function upstreamFor(current: string | undefined, written: string | undefined, remembered: string | undefined): string {
  if (current && current !== written) return current;
  return remembered || OllamaDefault;
}

// withSetting returns a settings.json text with key set to value, keeping
// every other entry; it refuses a file that is not a plain JSON object
// (comments and trailing commas included) rather than rewriting it.
export function withSetting(text: string, key: string, value: unknown): string {
  let s: Record<string, unknown> = {};
  if (text.trim()) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw new Error(`the workspace settings file is not plain JSON (${(e as Error).message}); add "${key}": ${JSON.stringify(value)} to it by hand`);
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`the workspace settings file is not a JSON object; add "${key}": ${JSON.stringify(value)} to it by hand`);
    s = v as Record<string, unknown>;
  }
  s[key] = value;
  return JSON.stringify(s, null, 2) + "\n";
}

// meterMessage is what the "Meter models through joule proxy" command asks
// and says: which setting it writes, to what, and what stays invisible.
export function meterMessage(proxy: string, upstream: string): string {
  return `joule proxy is metering on ${proxy} (forwarding Ollama calls to ${upstream}). ` +
    `Point Copilot Chat's bring-your-own-key Ollama models at it by setting ${OllamaEndpoint} to ${proxy} in this workspace's settings? ` +
    "Only models whose calls go through this base URL are metered: VS Code's own agent, Copilot's default models and their tokens stay invisible to an extension (JouleHook §7).";
}

// TaskType is the task type the extension provides: a tasks.json entry
// {"type": "joule", "command": LINE} is a shell line that joule's gate
// decides before it runs, and that runs confined by joule exec.
export const TaskType = "joule";

// TaskIO is what a gated task needs of its host: a terminal to write to
// (lines end in \r\n there) and a human to ask when the gate says ask.
export interface TaskIO {
  write(text: string): void;
  ask(line: string, reason: string): Promise<boolean>;
}

// execArgs is the command line a gated task runs: the line under joule
// exec, confined by the kernel to what the session's active grant allows
// (docs/gate.md, "Containment"), as the hosts that can rewrite a command
// run it.
export function execArgs(session: string, line: string): string[] {
  return ["exec", "--session", session, "--", "/bin/sh", "-c", line];
}

// runTask is a gated task: joule gate decides the line (a receipt is
// sealed either way); it runs, under joule exec, only on allow, or on ask
// when the human says yes. Anything else, a gate that cannot answer
// included, runs nothing and fails the task. It resolves to the exit
// status; kill stops a running line.
export function runTask(o: Options, cwd: string, line: string, io: TaskIO): { done: Promise<number>; kill(): void } {
  let child: ReturnType<typeof spawn> | undefined;
  let killed = false;
  const crlf = (s: string) => s.replace(/\r?\n/g, "\r\n");
  const done = (async () => {
    const d = await gate(o, cwd, { tool: "Bash", command: line });
    io.write(crlf(describe(d)) + "\r\n");
    let run = d.decision === "allow";
    if (d.decision === "ask") run = await io.ask(line, d.reason ?? "");
    if (!run || killed) {
      io.write(`joule: not run: ${line}\r\n`);
      return 1;
    }
    return await new Promise<number>((resolve) => {
      child = spawn(o.path, execArgs(o.session, line), { env: env(o), cwd, stdio: ["ignore", "pipe", "pipe"] });
      child.stdout?.on("data", (b) => io.write(crlf(String(b))));
      child.stderr?.on("data", (b) => io.write(crlf(String(b))));
      child.on("error", (e) => { io.write(`joule exec: ${e.message}\r\n`); resolve(1); });
      child.on("close", (code) => resolve(code ?? 1));
    });
  })();
  return { done, kill: () => { killed = true; child?.kill(); } };
}
