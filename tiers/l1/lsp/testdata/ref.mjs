// ref.mjs: the reference the tests of tiers/l1/lsp compare against, written
// independently of the Go client: a direct LSP session with the server in
// Node, whose strings index UTF-16 code units as LSP positions do, applying
// the server's WorkspaceEdit itself. Prints {"path": "new content", ...} for
// every file the edit changes.
//
//   node ref.mjs SERVER ROOT EXTS rename FILE LINE COL NEWNAME   (1-based; COL in bytes)
//   node ref.mjs SERVER ROOT EXTS organize FILE
import { spawn } from "node:child_process";
import { readFileSync, readdirSync, realpathSync, statSync } from "node:fs";
import { join, relative, extname } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const [server, rootArg, extsArg, verb, file, ...rest] = process.argv.slice(2);
const root = realpathSync(rootArg);
const exts = extsArg.split(",");
const srv = spawn(server, ["--stdio"], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
let buf = Buffer.alloc(0), id = 0;
const waiting = new Map();
const send = (m) => { const b = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...m })); srv.stdin.write(`Content-Length: ${b.length}\r\n\r\n`); srv.stdin.write(b); };
const call = (method, params) => new Promise((res, rej) => { id++; waiting.set(id, { res, rej }); send({ id, method, params }); });
srv.stdout.on("data", (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const h = buf.indexOf("\r\n\r\n");
    if (h < 0) return;
    const n = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, h).toString())[1]);
    if (buf.length < h + 4 + n) return;
    const m = JSON.parse(buf.subarray(h + 4, h + 4 + n).toString());
    buf = buf.subarray(h + 4 + n);
    if (m.method && m.id !== undefined) {
      const result = m.method === "workspace/configuration" ? m.params.items.map(() => null) : null;
      send({ id: m.id, result });
    } else if (m.id !== undefined && waiting.has(m.id)) {
      const w = waiting.get(m.id); waiting.delete(m.id);
      m.error ? w.rej(new Error(m.error.message)) : w.res(m.result);
    }
  }
});
const walk = (d) => readdirSync(d).flatMap((n) => {
  if (n === "node_modules" || n.startsWith(".")) return [];
  const p = join(d, n);
  return statSync(p).isDirectory() ? walk(p) : [p];
});
const uri = (p) => pathToFileURL(p).href;
const langs = { ".ts": "typescript", ".tsx": "typescriptreact", ".js": "javascript", ".jsx": "javascriptreact", ".py": "python" };
await call("initialize", {
  processId: process.pid, rootUri: uri(root), workspaceFolders: [{ uri: uri(root), name: "ref" }],
  capabilities: { workspace: { configuration: true, workspaceEdit: { documentChanges: true } },
    textDocument: { codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ["source.organizeImports"] } } } } },
});
send({ method: "initialized", params: {} });
for (const p of walk(root).sort()) {
  if (exts.includes(extname(p))) send({ method: "textDocument/didOpen", params: { textDocument: { uri: uri(p), languageId: langs[extname(p)] ?? "plaintext", version: 1, text: readFileSync(p, "utf8") } } });
}
const target = uri(join(root, file));
let edit;
if (verb === "rename") {
  const line = readFileSync(join(root, file), "utf8").split("\n")[+rest[0] - 1];
  const character = Buffer.from(line).subarray(0, +rest[1] - 1).toString().length;
  edit = await call("textDocument/rename", { textDocument: { uri: target }, position: { line: +rest[0] - 1, character }, newName: rest[2] });
} else if (server.endsWith("pyright-langserver")) {
  edit = await call("workspace/executeCommand", { command: "pyright.organizeimports", arguments: [target] });
} else {
  const text = readFileSync(join(root, file), "utf8").split("\n");
  const acts = await call("textDocument/codeAction", { textDocument: { uri: target },
    range: { start: { line: 0, character: 0 }, end: { line: text.length - 1, character: text[text.length - 1].length } },
    context: { diagnostics: [], only: ["source.organizeImports"] } });
  edit = acts.find((a) => a.kind?.startsWith("source.organizeImports"))?.edit;
}
const per = {};
for (const [u, es] of Object.entries(edit?.changes ?? {})) per[u] = (per[u] ?? []).concat(es);
for (const dc of edit?.documentChanges ?? []) per[dc.textDocument.uri] = (per[dc.textDocument.uri] ?? []).concat(dc.edits);
const out = {};
for (const [u, es] of Object.entries(per)) {
  const p = fileURLToPath(u);
  const lines = readFileSync(p, "utf8").split("\n");
  const starts = []; let o = 0;
  for (const l of lines) { starts.push(o); o += l.length + 1; }
  let text = lines.join("\n");
  const off = (pos) => starts[pos.line] + pos.character;
  for (const e of [...es].sort((a, b) => off(b.range.start) - off(a.range.start))) {
    text = text.slice(0, off(e.range.start)) + e.newText + text.slice(off(e.range.end));
  }
  out[relative(root, p)] = text;
}
process.stdout.write(JSON.stringify(out));
await call("shutdown", null).catch(() => {});
send({ method: "exit" });
srv.kill();
process.exit(0);
