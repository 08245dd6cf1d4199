// drive.mjs: drives a real VS Code workbench (code-server, started by the
// Go test in ../../host_test.go) in Debian's chromium under playwright-core
// (no browser download), with the joule extension installed from its .vsix.
//
//   node drive.mjs URL DIR SHOTDIR
//
// It talks with the Go test through files in DIR: at each step it writes
// STEP.json (what the page showed) and waits for STEP.reply (what the test
// wants to see next, computed from the real binary for the same store).
// Its last stdout line is one JSON object of everything it saw.
import { chromium } from "playwright-core";
import fs from "node:fs";

const [url, dir, shots] = process.argv.slice(2);
const out = { steps: [] };
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.setDefaultTimeout(60000);
page.on("pageerror", (e) => { out.pageErrors = (out.pageErrors || []).concat(String(e)); });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const item = "[id='joulehook.joule-vscode.joule.status']";
const shot = async (name) => { if (shots) await page.screenshot({ path: `${shots}/${name}` }); };

async function handshake(step, obs) {
  out.steps.push(step);
  fs.writeFileSync(`${dir}/${step}.json.tmp`, JSON.stringify(obs));
  fs.renameSync(`${dir}/${step}.json.tmp`, `${dir}/${step}.json`);
  const f = `${dir}/${step}.reply`;
  for (let i = 0; i < 1800 && !fs.existsSync(f); i++) await sleep(100);
  if (!fs.existsSync(f)) throw new Error(`the test did not answer ${step}`);
  return JSON.parse(fs.readFileSync(f, "utf8"));
}

const statusText = async () => (await page.locator(item).textContent()).trim();

// waitStatus waits until the status bar item shows want.
async function waitStatus(want, ms = 90000) {
  const t0 = Date.now();
  let got = "";
  while (Date.now() - t0 < ms) {
    got = await statusText();
    if (got === want) return Date.now() - t0;
    await sleep(200);
  }
  throw new Error(`the status bar shows ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// palette runs a command from the command palette, by its title.
async function palette(title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input:visible").first();
  await input.waitFor();
  await input.fill(">" + title);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 30000 });
  await row.click();
}

// figures are the session view's figures in a frame (the webview's or
// joule ui's own page).
async function figures(frame) {
  const f = {};
  for (const k of ["energy", "decisions", "budget-left", "receipts"]) f[k] = (await frame.locator(`[data-testid=${k}]`).first().textContent()).trim();
  f.rows = await frame.locator("#chain .r").count();
  return f;
}

// runTask runs a task of tasks.json through VS Code's own "Tasks: Run
// Task", by its label.
async function runTask(label) {
  await palette("Tasks: Run Task");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first();
  await row.waitFor({ timeout: 60000 });
  await row.click();
}

// terminalText waits until a terminal shows text, and returns what it shows.
async function terminalText(text, ms = 60000) {
  const t0 = Date.now();
  let all = [];
  while (Date.now() - t0 < ms) {
    all = await page.$$eval(".xterm-rows", (rs) => rs.map((r) => r.innerText.replace(/\u00a0/g, " ")));
    const hit = all.find((t) => t.includes(text));
    if (hit) return hit.split("\n").map((l) => l.trimEnd()).filter((l) => l).join("\n");
    await sleep(200);
  }
  throw new Error(`no terminal shows ${JSON.stringify(text)}: ${JSON.stringify(all)}`);
}

async function toast(text, ms = 60000) {
  const t = page.locator(".notification-list-item-message", { hasText: text }).last();
  await t.waitFor({ timeout: ms });
  return (await t.textContent()).trim();
}

async function main() {
  const t0 = Date.now();
  await page.goto(url, { waitUntil: "domcontentloaded", timeout: 180000 });
  await page.locator(item).waitFor({ timeout: 240000 });
  // The first figures: an item shows "joule" until its first read.
  for (let i = 0; i < 600 && !(await statusText()).includes("allowed"); i++) await sleep(100);
  out.workbenchMs = Date.now() - t0;
  out.status1 = await statusText();
  out.tooltip1 = await page.locator(item).getAttribute("aria-label");
  await shot("vscode-statusbar.png");

  // A new decision, sealed by the test through the real binary: the
  // status bar follows.
  let reply = await handshake("status1", { text: out.status1 });
  out.updateMs = await waitStatus(reply.want);
  out.status2 = await statusText();

  // The extension's own language-model tool, invoked through the host's
  // tool service (vscode.lm.invokeTool) by the "Ask the gate" command.
  await palette("joule: Ask the gate about a shell command");
  const box = page.locator(".quick-input-widget input:visible").first();
  await box.waitFor();
  await page.locator(".quick-input-widget", { hasText: "A shell command to check" }).first().waitFor({ timeout: 30000 });
  await box.fill(reply.command);
  await page.keyboard.press("Enter");
  out.checked = await toast("joule gate:");
  reply = await handshake("checked", { toast: out.checked });
  await waitStatus(reply.want);
  out.status3 = await statusText();

  // What the host lists for the extension.
  await palette("joule: What this window's joule sees");
  out.about = await toast("language-model tool");

  // The MCP server definition, as VS Code's own "MCP: List Servers" shows it,
  // then started by the host from that definition.
  await palette("MCP: List Servers");
  const joule = page.locator(".quick-input-list .monaco-list-row", { hasText: "joule receipts and gated workspace tools" }).first();
  await joule.waitFor({ timeout: 60000 });
  out.mcpListed = (await joule.textContent()).trim();
  await joule.click();
  const start = page.locator(".quick-input-list .monaco-list-row", { hasText: "Start Server" }).first();
  await start.waitFor({ timeout: 30000 });
  await start.click();
  // VS Code's log of that server (Output, "MCP: joule") says when it runs
  // and how many tools it listed (Monaco draws its spaces as U+00A0).
  const discovered = page.locator(".view-line", { hasText: /Discovered\s\d+\stools/ }).first();
  await discovered.waitFor({ timeout: 120000 });
  out.mcpLog = await page.$$eval(".view-line", (ls) => ls.map((l) => l.textContent.replace(/\u00a0/g, " ")).filter((t) => /Connection state|Discovered|Starting server/.test(t)));
  await shot("vscode-mcp.png");
  await page.keyboard.press("Escape");

  // The dashboard's session view, in the extension's webview.
  await palette("joule: Open the receipts dashboard");
  let frame;
  for (let i = 0; i < 600 && !frame; i++) {
    frame = page.frames().find((f) => f.url().includes("#/session/"));
    if (!frame) await sleep(100);
  }
  if (!frame) throw new Error("no webview frame shows the session view: " + page.frames().map((f) => f.url()).join(" "));
  out.webviewURL = frame.url().replace(/token=[0-9a-f]+/, "token=…");
  await frame.locator("[data-testid=energy]").waitFor({ timeout: 60000 });
  await frame.locator("#chain .r").first().waitFor({ timeout: 60000 });
  out.webview = {};
  for (const k of ["energy", "decisions", "budget-left", "receipts"]) out.webview[k] = (await frame.locator(`[data-testid=${k}]`).first().textContent()).trim();
  out.webview.rows = await frame.locator("#chain .r").count();
  const box2 = await frame.frameElement().then((e) => e.boundingBox());
  out.webview.size = box2 ? [Math.round(box2.width), Math.round(box2.height)] : null;
  // Live: the dashboard's event stream reaches it through the proxy, and a
  // decision the test seals now appears without a reload.
  await frame.locator("#live.on").waitFor({ timeout: 60000 });
  out.webview.live = (await frame.locator("#live").textContent()).trim();
  await shot("vscode-webview.png");
  reply = await handshake("webview", out.webview);
  await frame.waitForFunction((want) => document.querySelector("[data-testid=decisions]")?.textContent.trim() === want, reply.decisions, { timeout: 90000 });
  out.webview.liveDecisions = (await frame.locator("[data-testid=decisions]").first().textContent()).trim();
  out.webview.liveRows = await frame.locator("#chain .r").count();
  out.webview.after = await figures(frame);
  // joule ui itself, started by the test for the same store: its session
  // view shows the same figures as the webview.
  const ui = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await ui.goto(reply.ui, { waitUntil: "domcontentloaded" });
  await ui.waitForFunction((n) => document.querySelectorAll("#chain .r").length === n, out.webview.liveRows, { timeout: 60000 });
  out.jouleUI = await figures(ui.mainFrame());
  await ui.close();

  // Model traffic through joule proxy: the command starts the proxy, asks
  // (a modal) before it writes the workspace setting, then says where.
  const m0 = Date.now();
  await palette("joule: Meter models through joule proxy");
  const dialog = page.locator(".monaco-dialog-box").first();
  await dialog.waitFor({ timeout: 60000 });
  out.meterAsk = (await dialog.textContent()).trim();
  await dialog.locator(".monaco-button", { hasText: "Write workspace setting" }).first().click();
  out.meter = await toast("written to");
  out.meterMs = Date.now() - m0;
  await handshake("meter", { toast: out.meter });

  // A gated action through the host's own task system: tasks of type
  // "joule" in the workspace's tasks.json, run by "Tasks: Run Task" in
  // VS Code's terminal. The first is allowed and writes in the workspace;
  // the second is denied, and its terminal says why.
  await page.keyboard.press("Escape");
  await runTask("gated: write in the workspace");
  out.task1 = await terminalText("joule gate: allow");
  reply = await handshake("task1", { terminal: out.task1 });
  await waitStatus(reply.want);
  await runTask("gated: write outside the workspace");
  out.task2 = await terminalText("joule gate: deny");
  await shot("vscode-task.png");
  reply = await handshake("task2", { terminal: out.task2 });
  await waitStatus(reply.want);
  out.status4 = await statusText();

  // No joule: the test moves the binary away. The status bar says so, and
  // the tool answers deny without a decision from joule.
  await handshake("missing", {});
  await waitStatus("joule");
  await page.keyboard.press("Escape");
  await palette("joule: Ask the gate about a shell command");
  await page.locator(".quick-input-widget", { hasText: "A shell command to check" }).first().waitFor({ timeout: 30000 });
  await box.fill("go vet ./...");
  await page.keyboard.press("Enter");
  out.missing = await toast("joule gate: deny (internal-error)");
  await handshake("missing-checked", { toast: out.missing });
}

try {
  await main();
} catch (e) {
  out.error = String(e && e.stack || e);
  await shot("vscode-error.png").catch(() => {});
}
await browser.close();
console.log(JSON.stringify(out));
