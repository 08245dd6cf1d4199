// Drives `joule mcp` over stdio with the official TypeScript SDK client, as
// an editor would: lists and reads the joule:// resources, calls every tool
// (allowed and denied), subscribes to the server's session and waits for
// notifications/resources/updated after a separate `joule gate` process
// seals a decision in it. Prints one JSON report on stdout; exits 1 on any
// failed check. Driven by TestMCPTypeScriptClient in cmd/joule.
//
// env: JOULE_BIN (the joule binary), JOULE_HOME, HOME, MCP_WORKSPACE, MCP_SESSION.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { execFileSync } from "node:child_process";

const bin = process.env.JOULE_BIN;
const ws = process.env.MCP_WORKSPACE;
const session = process.env.MCP_SESSION;
const env = { ...process.env };
const failures = [];
const report = { server: null, resources: [], templates: [], tools: {}, notification: null, failures };

function check(ok, what) {
  if (!ok) failures.push(what);
}

const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--workspace", ws, "--session", session], env, stderr: "inherit" });
const client = new Client({ name: "joule-ts-test", version: "1.0.0" });

let updated = null;
const updates = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.push(n.params.uri);
  if (updated) updated(n.params.uri);
});

await client.connect(transport);
report.server = client.getServerVersion();
const caps = client.getServerCapabilities();
check(caps?.resources?.subscribe === true, "server does not advertise resources.subscribe");
check(typeof client.getInstructions() === "string" && client.getInstructions().includes("gate"), "instructions do not mention the gate");

// Resources and templates.
const res = await client.listResources();
report.resources = res.resources.map((r) => r.uri);
for (const uri of ["joule://steward", "joule://sessions", "joule://checkpoint", "joule://grants"]) {
  check(report.resources.includes(uri), `resources/list lacks ${uri}`);
}
const tpl = await client.listResourceTemplates();
report.templates = tpl.resourceTemplates.map((t) => t.uriTemplate);
check(report.templates.includes("joule://sessions/{session}/receipts/{seq}"), "no receipt template");

const steward = JSON.parse((await client.readResource({ uri: "joule://steward" })).contents[0].text);
check(steward.steward === "test.example" && steward.public_key.length > 40, "steward resource is wrong");

// Every tool, allowed and denied.
const text = (r) => r.content.map((c) => c.text).join("\n");
async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  report.tools[`${name}:${JSON.stringify(args).slice(0, 60)}`] = { isError: !!r.isError, text: text(r).slice(0, 300) };
  return r;
}
const tools = (await client.listTools()).tools;
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(["edit_file", "gate", "list_directory", "read_file", "run_command", "search", "status", "write_file"]), `tools are ${names}`);
const ann = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
check(ann.read_file.readOnlyHint === true && ann.read_file.destructiveHint === false, "read_file annotations");
check(ann.write_file.readOnlyHint === false && ann.write_file.destructiveHint === true, "write_file annotations");

const allowed = [
  ["write_file", { path: "src/hello.txt", content: "hello world\nhello again\n" }],
  ["read_file", { path: "src/hello.txt" }],
  ["edit_file", { path: "src/hello.txt", old_string: "world", new_string: "joule" }],
  ["list_directory", { path: "src" }],
  ["search", { pattern: "hello j.ule" }],
  ["run_command", { command: "go version || true" }],
];
for (const [name, args] of allowed) {
  const r = await call(name, args);
  check(!r.isError, `${name} allowed call failed: ${text(r)}`);
  check(/receipt \S+ \(joule:\/\/sessions\/[^/]+\/receipts\/\d+\)/.test(text(r)), `${name} result names no receipt`);
}
check(text(await call("read_file", { path: "src/hello.txt" })).startsWith("hello joule"), "edit did not apply");
check(text(await call("search", { pattern: "hello j.ule" })).includes("src/hello.txt:1:"), "search found nothing");

const deniedCalls = [
  ["write_file", { path: "/etc/joule-test", content: "x" }],
  ["read_file", { path: "/etc/passwd" }],
  ["edit_file", { path: "/etc/hosts", old_string: "a", new_string: "b" }],
  ["list_directory", { path: "/" }],
  ["search", { pattern: "root", path: "/etc" }],
  ["run_command", { command: "sudo ls" }],
];
for (const [name, args] of deniedCalls) {
  const r = await call(name, args);
  check(r.isError === true, `${name} denied call was not an error result`);
  check(text(r).includes("denied by the joule gate") && /receipt \S+/.test(text(r)), `${name} denial lacks reason or receipt: ${text(r)}`);
}
const bad = await call("read_file", { path: 42 });
check(bad.isError === true && text(bad).includes("must be a string"), "wrong argument type not reported");

const st = await call("status", {});
check(!st.isError && text(st).includes(session), "status");

const g = await call("gate", { session_id: session, tool_name: "Bash", tool_input: { command: "sudo rm -rf /" }, cwd: ws, hook_event_name: "PreToolUse" });
const gd = JSON.parse(text(g));
check(gd.decision === "deny" && gd.hookSpecificOutput.permissionDecision === "deny", "gate tool did not deny");

// The session summary and a receipt.
const sum = JSON.parse((await client.readResource({ uri: `joule://sessions/${encodeURIComponent(session)}` })).contents[0].text);
check(sum.decisions.allowed >= 6 && sum.decisions.denied >= 6, `summary counts ${JSON.stringify(sum.decisions)}`);
check(sum.chain.startsWith("intact"), "chain not intact");
check(sum.coverage.includes("cannot") || sum.coverage.includes("not counted"), "no honest coverage line");
const rc = await client.readResource({ uri: `joule://sessions/${encodeURIComponent(session)}/receipts/1` });
const r1 = JSON.parse(rc.contents[0].text);
check(r1.verified === true && r1.receipt.jc_receipt === "joule-decision/1", "receipt 1 does not verify");

// Subscribe, then let a separate joule gate process seal a decision.
await client.subscribeResource({ uri: sum.uri });
const got = new Promise((resolve) => { updated = resolve; });
const t0 = Date.now();
const ev = JSON.stringify({ session_id: session, tool: "Bash", input: { command: "go test ./..." }, cwd: ws });
const out = JSON.parse(execFileSync(bin, ["gate"], { input: ev, env }).toString());
check(out.session === session && out.receipt, "joule gate did not seal");
const uri = await Promise.race([got, new Promise((r) => setTimeout(() => r(null), 3000))]);
report.notification = { uri, ms: Date.now() - t0 };
check(uri === sum.uri, `no resources/updated for ${sum.uri} within 3 s (got ${uri})`);

// Unknown resources are errors, not crashes.
for (const u of ["joule://nope", `joule://sessions/${session}/receipts/0`, `joule://sessions/${session}/receipts/x`]) {
  try {
    await client.readResource({ uri: u });
    failures.push(`reading ${u} did not fail`);
  } catch (e) {
    report.tools[`read ${u}`] = { error: String(e.message).slice(0, 200) };
  }
}
check((await client.listTools()).tools.length === 8, "server unresponsive after bad input");

await client.close();
console.log(JSON.stringify(report));
process.exit(failures.length ? 1 : 0);
