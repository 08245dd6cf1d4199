// drive.mjs: drives Debian's chromium (playwright-core, no browser
// download) through joule ui. The Go test starts joule ui and passes its
// URL; this prints one JSON object of what the page showed, which the Go
// test compares with joule receipts / joule statusline.
//
//   node drive.mjs <command> <url> [args...]
//
// commands:
//   suite SPEC.json                the whole TestDashboard walk in one browser
//   sessions URL                   the sessions table, and first paint timing
//   session URL ID SHOTDIR         the session view's figures, a receipt opened
//   live URL ID MARKER_FILE        waits until the chain grows (the test seals
//                                  more after MARKER_FILE appears)
//   scroll URL ID                  scrolls a long chain, counts the pages fetched
//   grants URL SHOTDIR             the grants view
//   bad URL                        garbage parameters and an unknown session
import { chromium } from "playwright-core";
import fs from "node:fs";

const [cmd, url, ...rest] = process.argv.slice(2);
const exe = process.env.CHROMIUM || "/usr/bin/chromium";
const out = {};
const browser = await chromium.launch({ executablePath: exe, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const api = [];
page.on("request", (r) => { if (r.url().includes("/api/")) api.push(r.url()); });
page.on("pageerror", (e) => { out.pageErrors = (out.pageErrors || []).concat(String(e)); });
const shot = async (dir, name, full = true) => { if (dir) await page.screenshot({ path: `${dir}/${name}`, fullPage: full }); };
const text = async (sel) => (await page.locator(sel).first().textContent()).trim();

const wait = async (file) => { for (let i = 0; i < 1200 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 100)); if (!fs.existsSync(file)) throw new Error("timed out waiting for " + file); };

async function sessions(url, dir) {
  const o = {};
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForSelector("#sessions tbody tr");
  o.tableMs = Date.now() - t0;
  o.nav = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0];
    const p = performance.getEntriesByType("paint").find((e) => e.name === "first-contentful-paint");
    return { fcp: p ? Math.round(p.startTime) : null, html: Math.round(n.responseEnd - n.requestStart), dom: Math.round(n.domContentLoadedEventEnd) };
  });
  // First paint of the data: the sessions API answering.
  o.api = await page.evaluate(() => {
    const r = performance.getEntriesByType("resource").find((e) => e.name.includes("/api/sessions"));
    return r ? { end: Math.round(r.responseEnd), took: Math.round(r.responseEnd - r.startTime) } : null;
  });
  o.rows = await page.locator("#sessions tbody tr").count();
  await page.waitForFunction(() => !Array.from(document.querySelectorAll("#sessions .energy")).some((td) => td.textContent === "…"), null, { timeout: 120000 });
  o.figuresMs = Date.now() - t0;
  o.sessions = await page.$$eval("#sessions tbody tr", (trs) => trs.map((tr) => ({
    id: tr.dataset.session, receipts: tr.children[1].textContent, energy: tr.querySelector(".energy").textContent,
    decisions: tr.querySelector(".decisions").textContent, verdict: tr.querySelector(".verdict").textContent,
  })));
  await shot(dir, "ui-sessions.png");
  return o;
}

async function session(url, id, dir, name) {
  const o = {};
  await page.goto("about:blank");
  await page.goto(url + "#/session/" + encodeURIComponent(id));
  await page.waitForSelector("[data-testid=energy]");
  await page.waitForSelector("#chain .r");
  for (const k of ["energy", "decisions", "budget-left", "calls", "tokens", "observed", "receipts"]) o[k] = await text(`[data-testid=${k}]`);
  o.broken = (await page.locator("[data-testid=broken]").count()) ? await text("[data-testid=broken]") : "";
  o.cascade = (await page.locator("[data-testid=cascade]").count()) ? await text("[data-testid=cascade]") : "";
  o.chain = await page.$$eval("#chain .r", (rs) => rs.sort((a, b) => a.dataset.seq - b.dataset.seq).map((r) => Array.from(r.children).map((c) => c.textContent)));
  o.timeChart = await page.locator("#svg-time rect").count();
  // What was denied, and why: first, above the figures; the figures that
  // are zero folded after the others.
  o.denials = await page.$$eval("#denials-table tbody tr", (rs) => rs.map((r) => Array.from(r.children).map((c) => c.textContent)));
  o.denialsFirst = await page.evaluate(() => document.getElementById("denials").getBoundingClientRect().top < document.getElementById("cards").getBoundingClientRect().top);
  o.cards = await page.$$eval("#cards .v", (vs) => vs.map((v) => [v.dataset.testid, v.textContent]));
  o.zeroCards = await page.$$eval("#zero-cards .v", (vs) => vs.map((v) => [v.dataset.testid, v.textContent]));
  await shot(dir, `ui-session-${name}.png`);
  // Open the first bad receipt if any, else the first one.
  const badRow = page.locator("#chain .r.bad").first();
  const target = (await badRow.count()) ? badRow : page.locator("#chain .r").first();
  await target.click();
  await page.waitForSelector("[data-testid=verdict]");
  o.receiptVerdict = await text("[data-testid=verdict]");
  o.proof = await text("[data-testid=proof]");
  await shot(dir, `ui-receipt-${name}.png`, false);
  return o;
}

async function live(url, id, marker) {
  const o = {};
  await page.goto("about:blank");
  await page.goto(url + "#/session/" + encodeURIComponent(id));
  await page.waitForSelector("[data-testid=receipts]");
  o.before = await text("[data-testid=receipts]");
  await page.waitForSelector("#live.on");
  fs.writeFileSync(marker, "ready");
  await page.waitForFunction((b) => document.querySelector("[data-testid=receipts]").textContent.trim() !== b, o.before, { timeout: 60000 });
  o.after = await text("[data-testid=receipts]");
  o.decisions = await text("[data-testid=decisions]");
  return o;
}

async function scroll(url, id) {
  const o = {};
  await page.goto(url + "#/session/" + encodeURIComponent(id));
  await page.waitForSelector("#chain .r");
  const chainCalls = () => api.filter((u) => u.includes("/api/chain")).length;
  o.pagesAtFirst = chainCalls();
  o.drawnAtFirst = await page.locator("#chain .r").count();
  await page.locator("#chain").evaluate((el) => { el.scrollTop = el.scrollHeight / 2; });
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#chain .r")).some((r) => Number(r.dataset.seq) > 4000), null, { timeout: 60000 });
  await page.locator("#chain").evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#chain .r")).some((r) => Number(r.dataset.seq) > 9900), null, { timeout: 60000 });
  o.pagesAfter = chainCalls();
  o.drawnAfter = await page.locator("#chain .r").count();
  o.lastSeq = await page.$$eval("#chain .r", (rs) => Math.max(...rs.map((r) => Number(r.dataset.seq))));
  return o;
}

async function grants(url, dir) {
  await page.goto("about:blank");
  await page.goto(url + "#/grants");
  await page.waitForSelector("#grants-table tbody tr");
  const o = { grants: await page.$$eval("#grants-table tbody tr", (trs) => trs.map((tr) => tr.textContent)) };
  await shot(dir, "ui-grants.png");
  return o;
}

async function bad(url) {
  const o = {};
  await page.goto("about:blank");
  await page.goto(url + "#/session/no-such-session");
  await page.waitForSelector("#problem:not([hidden])");
  o.unknown = await text("#problem");
  o.garbage = await page.evaluate(async (u) => {
    const t = new URL(u).searchParams.get("token");
    const r = await fetch("/api/chain?id=x&offset=banana", { headers: { Authorization: "Bearer " + t } });
    return { status: r.status, body: await r.text() };
  }, url);
  o.noToken = await page.evaluate(async () => { const r = await fetch("/api/sessions"); return { status: r.status, body: await r.text() }; });
  return o;
}

// suite runs the steps of a JSON spec in one browser: each step's result
// is written to OUT/<step>.json as soon as it is known, so the Go test can
// act between steps (seal a receipt, tamper with the store) on markers.
async function suite(spec) {
  const res = {};
  const put = (k, v) => { res[k] = v; fs.writeFileSync(`${spec.out}/${k}.json`, JSON.stringify(v)); };
  put("sessions", await sessions(spec.url, spec.shots));
  for (const s of spec.sessions) put("session-" + s.name, await session(spec.url, s.id, spec.shots, s.name));
  put("grants", await grants(spec.url, spec.shots));
  put("bad", await bad(spec.url));
  put("live", await live(spec.url, spec.live.id, spec.live.marker));
  await wait(spec.tamper.wait);
  put("tampered", await session(spec.url, spec.tamper.id, spec.shots, "broken"));
  return res;
}

try {
  let r;
  if (cmd === "suite") r = await suite(JSON.parse(fs.readFileSync(url, "utf8")));
  else if (cmd === "sessions") r = await sessions(url, rest[0]);
  else if (cmd === "session") r = await session(url, rest[0], rest[1], rest[2] || "view");
  else if (cmd === "live") r = await live(url, rest[0], rest[1]);
  else if (cmd === "scroll") r = await scroll(url, rest[0]);
  else if (cmd === "grants") r = await grants(url, rest[0]);
  else if (cmd === "bad") r = await bad(url);
  else throw new Error("unknown command " + cmd);
  Object.assign(out, r);
} catch (e) {
  out.error = String(e && e.stack || e);
}
await browser.close();
process.stdout.write(JSON.stringify(out) + "\n");
