// Drives `joule acp` with the official TypeScript ACP SDK's client side, as
// an editor would, and prints what happened as one JSON object. Used by
// cmd/joule's TestACPTypeScriptClient.
//
// env: JOULE_BIN (the joule binary), WS (the workspace), FAKE_REMOTE (the
// scripted remote agent for L4); JOULE_HOME etc. are passed through.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const ws = process.env.WS;
const out = { steps: [], updates: {}, load: null, errors: [] };
// The editor's unsaved buffers, by absolute path, and what joule wrote.
const buffers = {};
const written = {};

function start(args) {
  const child = spawn(process.env.JOULE_BIN, ["acp", ...args], { cwd: ws, stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  let text = "";
  let last = Date.now();
  const app = acp
    .client({ name: "joule-ts-test" })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params: p }) => ({ content: buffers[p.path] ?? readFileSync(p.path, "utf8") }))
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params: p }) => {
      // The editor's buffer takes the content and is saved.
      writeFileSync(p.path, p.content);
      delete buffers[p.path];
      written[p.path] = p.content;
      return {};
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params: p }) => {
      const allow = p.options.find((o) => o.kind === "allow_once");
      return { outcome: allow ? { outcome: "selected", optionId: allow.optionId } : { outcome: "cancelled" } };
    })
    .onNotification(acp.methods.client.session.update, async ({ params: n }) => {
      last = Date.now();
      const u = n.update;
      out.updates[u.sessionUpdate] = (out.updates[u.sessionUpdate] || 0) + 1;
      if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") text += u.content.text + "\n";
    });
  // The SDK runs notification handlers asynchronously, so a prompt's
  // response can overtake its updates, even all of them: wait until this
  // prompt's message text has arrived (every prompt ends with a summary
  // line) and the updates have been quiet for 600 ms, at most 10 s.
  const settle = async () => {
    const start = Date.now();
    while ((text === "" || Date.now() - last < 600) && Date.now() - start < 10000) await new Promise((r) => setTimeout(r, 50));
  };
  return { child, stream, app, settle, take: () => { const t = text; text = ""; return t; } };
}

const init = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  clientInfo: { name: "joule-ts-test", version: "1" },
};

async function prompt(agent, c, sessionId, text) {
  const r = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  await c.settle();
  const step = { prompt: text, stopReason: r.stopReason, text: c.take(), meta: r._meta ?? null };
  out.steps.push(step);
  return step;
}

let sessionId;
const c1 = start(["--remote", process.env.FAKE_REMOTE]);
await c1.app.connectWith(c1.stream, async (agent) => {
  const ir = await agent.request(acp.methods.agent.initialize, init);
  out.protocolVersion = ir.protocolVersion;
  out.loadSession = ir.agentCapabilities?.loadSession === true;
  const ns = await agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  sessionId = ns.sessionId;
  out.sessionId = sessionId;
  const main = readFileSync(`${ws}/main.go`, "utf8");
  const greet = readFileSync(`${ws}/greet/greet.go`, "utf8");
  await prompt(agent, c1, sessionId, "rename Greeter.Hello to Greet");
  out.renamed = readFileSync(`${ws}/main.go`, "utf8").includes("g.Greet()");
  writeFileSync(`${ws}/main.go`, main);
  writeFileSync(`${ws}/greet/greet.go`, greet);
  await prompt(agent, c1, sessionId, "rename Greeter.Hello to Greet");
  await prompt(agent, c1, sessionId, "answer from typescript");
  await prompt(agent, c1, sessionId, '/replace "{}" "[]" .mcp.json');
  // An unsaved buffer: main.go in the editor calls Greet a second time,
  // which the disk does not have. The rename must see and rename it, and
  // write the buffer back through the editor.
  const onDisk = readFileSync(`${ws}/main.go`, "utf8");
  buffers[`${ws}/main.go`] = onDisk.replace("fmt.Println(g.Greet())", 'fmt.Println(g.Greet())\n\tfmt.Println(g.Greet() + "!")');
  await prompt(agent, c1, sessionId, "rename Greeter.Greet to Hi");
  out.buffer = { written: written[`${ws}/main.go`] ?? null, pending: `${ws}/main.go` in buffers };
  // Requests as people phrase them; each response's _meta says what happened.
  await prompt(agent, c1, sessionId, "Where is `Greeter.Hi` defined?");
  await prompt(agent, c1, sessionId, "Rename the method `Hi` of `Greeter` in greet/greet.go to `Salute`.");
  await prompt(agent, c1, sessionId, "Run gofmt on main.go.");
  // Cancel mid-prompt: the remote hangs until joule cancels it.
  const hanging = agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hang" }] });
  await new Promise((r) => setTimeout(r, 1500));
  await agent.notify(acp.methods.agent.session.cancel, { sessionId });
  const hr = await hanging;
  await c1.settle();
  out.steps.push({ prompt: "hang", stopReason: hr.stopReason, text: c1.take() });
  try {
    await agent.request(acp.methods.agent.session.prompt, { sessionId: "acp-unknown", prompt: [{ type: "text", text: "x" }] });
  } catch (e) {
    out.errors.push(String(e.message || e));
  }
});
c1.child.stdin.end();
await new Promise((r) => c1.child.on("exit", r));

const c2 = start([]);
await c2.app.connectWith(c2.stream, async (agent) => {
  await agent.request(acp.methods.agent.initialize, init);
  await agent.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
  await c2.settle();
  out.load = { text: c2.take() };
  await prompt(agent, c2, sessionId, "rename the branch to main");
  await prompt(agent, c2, sessionId, "/cost");
});
c2.child.stdin.end();
await new Promise((r) => c2.child.on("exit", r));
process.stdout.write(JSON.stringify(out) + "\n");
