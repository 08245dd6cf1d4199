// The joule extension: JouleHook's vscode profile (§6). Its own
// contributed tool is gated (joule gate), its receipts show in the status
// bar and in the dashboard's session view, and the joule MCP server is
// offered to agent mode. VS Code's own agent and its tokens stay invisible
// to it (§7): the status bar says so.
import * as vscode from "vscode";
import * as joule from "./joule";

function options(): joule.Options {
  const c = vscode.workspace.getConfiguration("joule");
  return { path: c.get<string>("path") || "joule", home: c.get<string>("home") || undefined, session: c.get<string>("session") || "vscode" };
}

function workspaceDir(): string {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
}

let ui: joule.UI | undefined;
let proxy: joule.Proxy | undefined;

// writeWorkspaceSetting sets key in this workspace's settings. Through the
// configuration API when the setting is registered (its extension is
// installed); otherwise in .vscode/settings.json itself, keeping every
// other entry, so that the extension that reads it finds it when it comes.
async function writeWorkspaceSetting(key: string, value: string): Promise<string> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error("no folder is open: a workspace setting needs one");
  const file = vscode.Uri.joinPath(folder.uri, ".vscode", "settings.json");
  try {
    await vscode.workspace.getConfiguration().update(key, value, vscode.ConfigurationTarget.Workspace);
    return file.fsPath;
  } catch {
    /* not a registered setting here: write the file */
  }
  let text = "";
  try {
    text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
  } catch {
    /* no settings file yet */
  }
  await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(joule.withSetting(text, key, value)));
  return file.fsPath;
}

// gatedTerminal is the terminal a "joule" task runs in: what the gate
// decided, then the line's own output under joule exec.
function gatedTerminal(line: string, cwd: string, refresh: () => void): vscode.Pseudoterminal {
  const write = new vscode.EventEmitter<string>();
  const close = new vscode.EventEmitter<number>();
  let run: { kill(): void } | undefined;
  return {
    onDidWrite: write.event,
    onDidClose: close.event,
    open() {
      const r = joule.runTask(options(), cwd, line, {
        write: (t) => write.fire(t),
        async ask(l, reason) {
          const yes = "Run";
          return (await vscode.window.showWarningMessage(`joule asks before this task runs: ${l}`, { modal: true, detail: reason }, yes)) === yes;
        },
      });
      run = r;
      r.done.then((code) => { refresh(); close.fire(code); });
    },
    close() { run?.kill(); },
  };
}

export function activate(context: vscode.ExtensionContext): void {
  const item = vscode.window.createStatusBarItem("joule.status", vscode.StatusBarAlignment.Left, 100);
  item.name = "joule";
  item.command = "joule.openDashboard";
  item.text = "$(zap) joule";
  item.show();
  context.subscriptions.push(item);

  let busy = false;
  const refresh = async () => {
    if (busy) return;
    busy = true;
    try {
      const s = await joule.status(options());
      item.text = s.text;
      item.tooltip = s.tooltip;
    } finally {
      busy = false;
    }
  };
  const seconds = Math.max(1, vscode.workspace.getConfiguration("joule").get<number>("refreshSeconds") ?? 2);
  const timer = setInterval(refresh, seconds * 1000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
  refresh();

  context.subscriptions.push(vscode.commands.registerCommand("joule.refresh", refresh));
  context.subscriptions.push(
    vscode.commands.registerCommand("joule.openDashboard", async () => {
      const o = options();
      try {
        if (!ui) ui = await joule.startUI(o);
      } catch (e) {
        vscode.window.showErrorMessage(`joule ui: ${(e as Error).message}`);
        return;
      }
      const target = await vscode.env.asExternalUri(vscode.Uri.parse(joule.sessionURL(ui.url, o.session)));
      // The dashboard runs its own script in the frame: a webview without
      // enableScripts sandboxes its frames without scripts too. The
      // webview's own document runs none (default-src 'none').
      const panel = vscode.window.createWebviewPanel("joule.dashboard", `joule: ${o.session}`, vscode.ViewColumn.Beside, { enableScripts: true });
      const origin = `${target.scheme}://${target.authority}`;
      panel.webview.html = `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; frame-src ${origin};">
<style>html,body,iframe{margin:0;padding:0;border:0;width:100%;height:100vh}</style></head>
<body><iframe src="${target.toString(true)}" title="joule receipts"></iframe></body></html>`;
    }),
  );

  // The extension's own tool: whatever the model asks it, joule decides
  // first, and the decision is sealed as a receipt.
  context.subscriptions.push(
    vscode.lm.registerTool<joule.GateInput>("joule_gate", {
      async prepareInvocation(opts) {
        return { invocationMessage: `joule gate: ${opts.input.tool} ${opts.input.command ?? opts.input.file_path ?? ""}` };
      },
      async invoke(opts) {
        const d = await joule.gate(options(), workspaceDir(), opts.input);
        refresh();
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(joule.describe(d))]);
      },
    }),
  );

  // The joule MCP server for agent mode: receipts as resources, gated
  // workspace tools.
  const changed = new vscode.EventEmitter<void>();
  context.subscriptions.push(changed);
  context.subscriptions.push(
    vscode.lm.registerMcpServerDefinitionProvider("joule.mcp", {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions() {
        const s = joule.mcpServer(options(), workspaceDir());
        return [new vscode.McpStdioServerDefinition(s.label, s.command, s.args, s.env)];
      },
    }),
  );
  // Ask the gate by hand, through VS Code's own tool machinery
  // (vscode.lm.invokeTool), exactly as agent mode would call the tool.
  context.subscriptions.push(
    vscode.commands.registerCommand("joule.check", async (command?: string) => {
      command ??= await vscode.window.showInputBox({ title: "joule gate", prompt: "A shell command to check against the active grant" });
      if (!command) return;
      const r = await vscode.lm.invokeTool("joule_gate", { input: { tool: "Bash", command }, toolInvocationToken: undefined });
      const text = r.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : "")).join("");
      vscode.window.showInformationMessage(text);
      return text;
    }),
  );
  // Tasks of type "joule" (tasks.json: {"type": "joule", "command": LINE}):
  // the host's task system runs them in its terminal, and the line runs
  // only when joule's gate allows it, confined by joule exec.
  context.subscriptions.push(
    vscode.tasks.registerTaskProvider(joule.TaskType, {
      provideTasks: () => [],
      resolveTask(task) {
        const command = (task.definition as { command?: unknown }).command;
        if (typeof command !== "string" || !command.trim()) return undefined;
        const folder = typeof task.scope === "object" ? task.scope.uri.fsPath : workspaceDir();
        const execution = new vscode.CustomExecution(async () => gatedTerminal(command, folder, refresh));
        return new vscode.Task(task.definition, task.scope ?? vscode.TaskScope.Workspace, task.name, joule.TaskType, execution);
      },
    }),
  );
  // What this window's joule contributes and sees, as the host lists it.
  context.subscriptions.push(
    vscode.commands.registerCommand("joule.about", () => {
      const tools = vscode.lm.tools.filter((t) => t.name === "joule_gate").map((t) => t.name);
      const s = joule.mcpServer(options(), workspaceDir());
      const text = joule.about(tools, s);
      vscode.window.showInformationMessage(text);
      return text;
    }),
  );
  // Model traffic through joule proxy, where VS Code lets a base URL be
  // set: Copilot Chat's bring-your-own-key Ollama endpoint. Written only
  // with the user's consent (joule.meterModels), at workspace scope.
  context.subscriptions.push(
    vscode.commands.registerCommand("joule.meterModels", async () => {
      const o = options();
      const mode = vscode.workspace.getConfiguration("joule").get<string>("meterModels") ?? "ask";
      const current = vscode.workspace.getConfiguration().inspect<string>(joule.OllamaEndpoint);
      const written = context.workspaceState.get<string>("joule.proxyURL");
      const upstream = joule.upstreamFor(current?.workspaceValue ?? current?.globalValue, written, context.workspaceState.get<string>("joule.ollamaUpstream"));
      try {
        if (!proxy?.running()) proxy = await joule.startProxy(o, upstream);
      } catch (e) {
        vscode.window.showErrorMessage(`joule proxy: ${(e as Error).message}`);
        return;
      }
      const ask = joule.meterMessage(proxy.url, upstream);
      if (mode === "never") {
        const text = `${ask} Not written: joule.meterModels is "never".`;
        vscode.window.showInformationMessage(text);
        return { url: proxy.url, written: false, text };
      }
      if (mode !== "always") {
        const yes = "Write workspace setting";
        if ((await vscode.window.showInformationMessage(ask, { modal: true }, yes)) !== yes) return { url: proxy.url, written: false, text: ask };
      }
      try {
        const file = await writeWorkspaceSetting(joule.OllamaEndpoint, proxy.url);
        await context.workspaceState.update("joule.proxyURL", proxy.url);
        await context.workspaceState.update("joule.ollamaUpstream", upstream);
        const text = `joule: ${joule.OllamaEndpoint} = ${proxy.url} written to ${file}. VS Code's own agent, Copilot's default models and their tokens stay invisible to an extension (JouleHook §7).`;
        vscode.window.showInformationMessage(text);
        return { url: proxy.url, written: true, text };
      } catch (e) {
        vscode.window.showErrorMessage(`joule: ${(e as Error).message}`);
        return { url: proxy.url, written: false, text: (e as Error).message };
      }
    }),
  );
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration("joule")) { changed.fire(); refresh(); } }));
}

export function deactivate(): void {
  ui?.stop();
  ui = undefined;
  proxy?.stop();
  proxy = undefined;
}
