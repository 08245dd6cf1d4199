"use strict";
// joule ui: a read-only dashboard of the store. Every figure comes from the
// server's JSON; charts are SVG drawn here from it. Nothing is fetched from
// anywhere but this server.
(function () {
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const main = document.getElementById("main");
  const problem = document.getElementById("problem");
  const live = document.getElementById("live");
  const ROW = 28, PAGE = 100;
  const TIERS = ["L0", "L1", "L2", "L3", "L4", "model", "gate"];
  const COLORS = { L0: "#2e7d32", L1: "#66bb6a", L2: "#29b6f6", L3: "#7e57c2", L4: "#ef6c00", model: "#c62828", gate: "#90a4ae" };
  let view = null; // the current view's refresh function, called on live updates
  let logSize = -1;

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }
  // energy formats µJ exactly as joule's CLI does (grant.FormatEnergy): the
  // largest unit, at most three decimals, truncated.
  function energy(uj) {
    uj = Math.max(0, Math.floor(Number(uj || 0)));
    for (const [d, u, n] of [[1e15, "GJ", 15], [1e12, "MJ", 12], [1e9, "kJ", 9], [1e6, "J", 6], [1e3, "mJ", 3]]) {
      if (uj < d) continue;
      const whole = Math.floor(uj / d), rem = uj - whole * d;
      let frac = String(rem).padStart(n, "0").replace(/0+$/, "");
      if (frac.length > 3) frac = frac.slice(0, 3).replace(/0+$/, "");
      return frac ? `${whole}.${frac} ${u}` : `${whole} ${u}`;
    }
    return uj + " µJ";
  }
  function trim(x) {
    let s = x.toPrecision(3);
    if (s.indexOf("e") >= 0) s = String(Math.round(x));
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }
  function when(ms) { return ms ? new Date(Number(ms)).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : ""; }
  function sessionLink(id) { return "#/session/" + encodeURIComponent(id); }

  function showProblem(msg) {
    if (!msg) { problem.hidden = true; problem.textContent = ""; return; }
    problem.hidden = false; problem.textContent = msg;
  }
  async function api(path, params) {
    const q = new URLSearchParams(params || {});
    let res;
    try {
      res = await fetch("api/" + path + "?" + q.toString(), { headers: { Authorization: "Bearer " + TOKEN } });
    } catch (e) {
      throw new Error("joule ui is not answering (was it stopped?)");
    }
    let body = null;
    try { body = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) throw new Error((body && body.error) || ("the server answered " + res.status));
    return body;
  }

  // --- routing
  function route() {
    const h = decodeURIComponent(location.hash.slice(1) || "/");
    document.getElementById("nav-sessions").classList.toggle("on", !h.startsWith("/grants"));
    document.getElementById("nav-grants").classList.toggle("on", h.startsWith("/grants"));
    closeDrawer();
    showProblem("");
    let m;
    if (h === "/" || h === "") return sessionsView(0);
    if ((m = h.match(/^\/sessions\/(\d+)$/))) return sessionsView(Number(m[1]));
    if (h === "/grants") return grantsView();
    if ((m = h.match(/^\/session\/(.+?)(?:\/(\d+))?$/))) {
      // Within the session already shown, a receipt opens over it.
      if (view && view.id === m[1] && view.chain) { if (m[2]) openReceipt(m[1], Number(m[2])); return; }
      return sessionView(m[1], m[2] ? Number(m[2]) : 0);
    }
    main.innerHTML = "";
    showProblem("No such page: " + h);
  }
  window.addEventListener("hashchange", route);

  // --- sessions
  async function sessionsView(offset) {
    const limit = 50;
    let data;
    try { data = await api("sessions", { offset, limit }); } catch (e) { main.innerHTML = ""; return showProblem(e.message); }
    let html = `<h1>Sessions <span class="muted">(${data.total})</span></h1>
<table id="sessions"><thead><tr><th>Session</th><th class="num">Receipts</th><th>Joules (as joule statusline)</th><th class="num">Observed (OTel)</th><th>Decisions</th><th class="num">Model calls</th><th class="num">Tokens</th><th>By tier</th><th>Chain</th><th>Last</th></tr></thead><tbody>`;
    for (const s of data.sessions) {
      html += `<tr data-session="${esc(s.id)}"><td><a href="${sessionLink(s.id)}">${esc(s.id)}</a></td><td class="num">${s.receipts}</td>` +
        `<td class="energy">…</td><td class="num observed">…</td><td class="decisions">…</td><td class="num calls">…</td><td class="num tokens">…</td><td class="tiers">…</td><td class="verdict">…</td><td class="muted">${when(s.last_ms)}</td></tr>`;
    }
    html += `</tbody></table><div class="pager"><button id="prev" ${offset <= 0 ? "disabled" : ""}>← newer</button><span class="muted">${data.total ? offset + 1 : 0}–${Math.min(offset + limit, data.total)} of ${data.total}</span><button id="next" ${offset + limit >= data.total ? "disabled" : ""}>older →</button></div>`;
    if (!data.total) html += `<p class="muted">No receipts yet. Gate an action (joule gate), meter a call (joule proxy) or run joule demo --keep and point JOULE_HOME at its home.</p>`;
    main.innerHTML = html;
    document.getElementById("prev").onclick = () => { location.hash = "#/sessions/" + Math.max(0, offset - limit); };
    document.getElementById("next").onclick = () => { location.hash = "#/sessions/" + (offset + limit); };
    const fill = (tr, st, line) => {
      tr.querySelector(".energy").textContent = line.energy;
      tr.querySelector(".observed").textContent = energy(st.observed_uj);
      tr.querySelector(".decisions").textContent = line.decisions;
      tr.querySelector(".calls").textContent = st.model_calls;
      tr.querySelector(".tokens").textContent = st.tokens.reduce((a, b) => a + b, 0);
      tr.querySelector(".tiers").innerHTML = tierBar(st.by_tier, 120);
      tr.querySelector(".verdict").innerHTML = st.damaged ? `<span class="v-bad">broken at seq ${st.first_bad}</span>` : `<span class="v-ok">verified</span>`;
    };
    // Figures come per session, a few at a time: the table paints first.
    const rows = Array.from(main.querySelectorAll("tr[data-session]"));
    let next = 0;
    const worker = async () => {
      while (next < rows.length) {
        const tr = rows[next++];
        try {
          const d = await api("session", { id: tr.dataset.session });
          fill(tr, d.stats, d.status_line);
        } catch (e) { tr.querySelector(".energy").textContent = e.message; }
      }
    };
    const mine = {};
    view = mine;
    mine.refresh = () => sessionsView(offset);
    await Promise.all([worker(), worker(), worker(), worker()]);
  }

  function tierBar(byTier, width) {
    const total = TIERS.reduce((a, t) => a + Number((byTier || {})[t] || 0), 0);
    if (!total) return `<span class="muted">—</span>`;
    let x = 0, svg = `<svg width="${width}" height="12" role="img" aria-label="joules by tier">`;
    for (const t of TIERS) {
      const v = Number((byTier || {})[t] || 0);
      if (!v) continue;
      const w = (v / total) * width;
      svg += `<rect x="${x}" y="0" width="${Math.max(w, 1)}" height="12" fill="${COLORS[t]}"><title>${t}: ${energy(v)}</title></rect>`;
      x += w;
    }
    return svg + "</svg>";
  }

  // --- one session
  async function sessionView(id, openSeq) {
    const mine = { id };
    view = mine;
    let d;
    try { d = await api("session", { id }); } catch (e) { main.innerHTML = `<h1>${esc(id)}</h1>`; return showProblem(e.message); }
    if (view !== mine) return;
    const st = d.stats;
    main.innerHTML = `<h1>Session <span id="session-id">${esc(id)}</span></h1>
<div id="broken"></div>
<h2>What was denied, and why <span class="muted" id="denials-count"></span></h2><div id="denials"></div>
<div class="cards" id="cards"></div><div id="zero-cards"></div>
<h2>Grants this session's receipts name</h2><div id="grants"></div>
<h2>Charts</h2><div class="charts"><div class="chartbox" id="chart-time"></div><div class="chartbox" id="chart-cascade"></div></div>
<h2>Chain <span class="muted" id="chain-count"></span></h2>
<div class="chain" id="chain"><div class="head"><span>SEQ</span><span>INDEX</span><span>VERDICT</span><span>KIND</span><span>DECISION</span><span>CODE</span><span>TOOL</span><span>TIER</span><span>ENERGY</span><span>SUMMARY</span></div><div id="spacer"></div></div>`;
    renderSession(d);
    const chain = makeChain(id, st.receipts);
    mine.chain = chain;
    mine.refresh = async () => {
      try {
        const nd = await api("session", { id });
        if (view !== mine) return;
        // The rows in view are fetched before anything is drawn, so the
        // cards and the list change together and the list never blanks.
        if (!(await chain.resize(nd.stats.receipts)) || view !== mine) return;
        renderSession(nd);
      } catch (e) { showProblem(e.message); }
    };
    if (openSeq) openReceipt(id, openSeq);
  }

  function card(k, v, cls, testid, zero) {
    return { zero: !!zero, html: `<div class="card ${cls || ""}"><div class="k">${k}</div><div class="v" data-testid="${testid || ""}">${v}</div></div>` };
  }
  // denialsTable lists what did not run, newest first: the decision, what
  // was asked for, the code and the reason as the receipt signed them.
  function denialsTable(d) {
    const rows = d.denials || [];
    if (!rows.length) return `<p class="muted" data-testid="denials">Nothing was denied in this session.</p>`;
    let h = `<table id="denials-table" data-testid="denials"><thead><tr><th class="num">Seq</th><th>When</th><th>Decision</th><th>What</th><th>Code</th><th>Why</th></tr></thead><tbody>`;
    for (const x of rows) {
      h += `<tr><td class="num"><a href="${sessionLink(d.id)}/${x.seq}">${x.seq}</a></td><td class="muted">${when(x.time_ms)}</td><td class="d-${esc(x.decision)}">${esc(x.decision)}</td>` +
        `<td>${esc(x.summary || x.tool)}</td><td>${esc(x.code)}</td><td class="why">${esc(x.reason)}</td></tr>`;
    }
    return h + "</tbody></table>";
  }
  function renderSession(d) {
    const st = d.stats, line = d.status_line;
    document.getElementById("broken").innerHTML = st.damaged
      ? `<div class="broken" data-testid="broken">Chain broken: ${st.damaged} of ${st.receipts} receipts do not verify; the first bad position is seq ${st.first_bad} (${esc(st.first_bad_verdict)}). <a href="${sessionLink(d.id)}/${st.first_bad}">Open it</a></div>`
      : "";
    const tok = st.tokens;
    const total = d.denials_total || 0, shown = (d.denials || []).length;
    document.getElementById("denials-count").textContent = total ? `(${total}${total > shown ? `, the last ${shown}` : ""})` : "";
    document.getElementById("denials").innerHTML = denialsTable(d);
    // Figures that are zero go after the others, folded: what happened
    // comes first.
    const cards = [
      card("Joules (as joule statusline)", esc(line.energy), "", "energy"),
      card("Decisions", esc(line.decisions), "", "decisions"),
      card("Budget left (active grant chain)", esc(d.budget_left), "", "budget-left"),
      card("Receipts", st.receipts + (st.damaged ? ` (${st.damaged} damaged)` : " (chain verified)"), "", "receipts"),
      card("Measured (HwShunt)", energy(st.measured_uj), "", "measured", !st.measured_uj),
      card("Modelled (ModelBased)", energy(st.modelled_uj), "", "modelled", !st.modelled_uj),
      card("Estimated (Estimator)", energy(st.estimated_uj), "", "estimated", !st.estimated_uj),
      card("Observed through OTel — observed, not enforced", energy(st.observed_uj), "observed", "observed", !st.observed_uj),
      card("Metered at the proxy (enforced)", energy(st.enforced_uj), "", "enforced", !st.enforced_uj),
      card("Model calls", st.model_calls + (st.fitted_calls ? ` (${st.fitted_calls} fitted to the budget)` : ""), "", "calls", !st.model_calls),
      card("Tokens in / cached / cache-write / out", tok.join(" / "), "", "tokens", !tok.some((n) => n)),
    ];
    const zeros = cards.filter((c) => c.zero);
    document.getElementById("cards").innerHTML = cards.filter((c) => !c.zero).map((c) => c.html).join("");
    document.getElementById("zero-cards").innerHTML = zeros.length
      ? `<details class="zeros"><summary class="muted">${zeros.length} figure${zeros.length > 1 ? "s are" : " is"} zero in this session</summary><div class="cards">${zeros.map((c) => c.html).join("")}</div></details>` : "";
    let g = `<table id="grant-use"><thead><tr><th>Grant</th><th class="num">Budget</th><th class="num">Spent</th><th class="num">Reserved</th><th class="num">Left</th><th></th></tr></thead><tbody>`;
    for (const u of d.grants) {
      g += `<tr><td><a href="#/grants">${esc(u.id)}</a></td>` + (u.error ? `<td colspan="5" class="v-bad">${esc(u.error)}</td>` :
        `<td class="num">${energy(u.budget_uj)}</td><td class="num">${energy(u.spent_uj)}</td><td class="num">${energy(u.reserved_uj)}</td><td class="num">${energy(u.left_uj)}</td><td>${u.revoked ? '<span class="v-bad">revoked</span>' : ""}</td>`) + `</tr>`;
    }
    if (!d.grants.length) g += `<tr><td colspan="6" class="muted">none</td></tr>`;
    document.getElementById("grants").innerHTML = g + "</tbody></table>";
    document.getElementById("chart-time").innerHTML = timeChart(d.chart);
    document.getElementById("chart-cascade").innerHTML = cascadeChart(d.cascade);
    document.getElementById("chain-count").textContent = `(${st.receipts} receipts)`;
  }

  function timeChart(c) {
    const W = 640, H = 220, L = 64, B = 28, T = 10;
    const names = TIERS.filter((t) => c.series && c.series[t]);
    if (!names.length) return `<div class="k">Joules over time by tier</div><p class="muted">No joules recorded.</p>`;
    const n = c.series[names[0]].length;
    let max = 0;
    for (let i = 0; i < n; i++) max = Math.max(max, names.reduce((a, t) => a + c.series[t][i], 0));
    const bw = (W - L - 8) / n, y = (v) => H - B - (v / max) * (H - B - T);
    let svg = `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="joules over time by tier, stacked" id="svg-time">`;
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4, yy = y(v);
      svg += `<line x1="${L}" x2="${W - 8}" y1="${yy}" y2="${yy}" stroke="#e5e7eb"/><text x="${L - 6}" y="${yy + 4}" font-size="10" text-anchor="end" fill="#5f6b7a">${energy(v)}</text>`;
    }
    for (let i = 0; i < n; i++) {
      let base = 0;
      for (const t of names) {
        const v = c.series[t][i];
        if (!v) continue;
        const y0 = y(base), y1 = y(base + v);
        svg += `<rect x="${L + i * bw + 1}" y="${y1}" width="${Math.max(bw - 2, 1)}" height="${Math.max(y0 - y1, 0.5)}" fill="${COLORS[t]}"><title>${t} ${energy(v)} at ${when(c.start_ms + i * c.bucket_ms)}</title></rect>`;
        base += v;
      }
    }
    svg += `<text x="${L}" y="${H - 8}" font-size="10" fill="#5f6b7a">${when(c.start_ms)}</text><text x="${W - 8}" y="${H - 8}" font-size="10" text-anchor="end" fill="#5f6b7a">${when(c.start_ms + n * c.bucket_ms)}</text></svg>`;
    const legend = names.map((t) => `<span><i style="background:${COLORS[t]}"></i>${t === "gate" ? "gate debits" : t === "model" ? "model calls (no tier)" : t}</span>`).join("");
    return `<div class="k">Joules over time by tier (stacked)</div>${svg}<div class="legend">${legend}</div>`;
  }

  function cascadeChart(c) {
    if (!c) return `<div class="k">Cascade savings against all-L4</div><p class="muted">The cascade did not run in this session.</p>`;
    const W = 320, H = 200, max = Math.max(c.all_l4_uj, c.spent_uj, 1);
    const logh = (v) => (Math.log10(v + 1) / Math.log10(max + 1)) * (H - 60);
    const bars = [["cascade", c.spent_uj, "#2e7d32"], ["all-L4", c.all_l4_uj, "#ef6c00"]];
    let svg = `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="cascade against all-L4" id="svg-cascade">`;
    bars.forEach(([name, v, col], i) => {
      const h = logh(v), x = 50 + i * 130;
      svg += `<rect x="${x}" y="${H - 30 - h}" width="90" height="${Math.max(h, 1)}" fill="${col}"/><text x="${x + 45}" y="${H - 34 - h}" font-size="11" text-anchor="middle">${energy(v)}</text><text x="${x + 45}" y="${H - 14}" font-size="11" text-anchor="middle">${name}</text>`;
    });
    svg += `</svg>`;
    const ratio = c.spent_uj ? (c.all_l4_uj / c.spent_uj) : 0;
    const closed = Object.keys(c.closed_by_tier).sort().map((t) => `${t}: ${c.closed_by_tier[t]}`).join(", ");
    return `<div class="k">Cascade savings against all-L4 (log scale)</div>${svg}<div data-testid="cascade">${c.requests} requests (${esc(closed)}): ${energy(c.spent_uj)} against ${energy(c.all_l4_uj)} all-L4${ratio ? `, ${ratio >= 100 ? Math.round(ratio).toLocaleString("en") : trim(ratio)}× less` : ""}</div><div class="muted" style="font-size:12px">All-L4 per request: ${energy(c.per_request_l4_uj)}, ${esc(c.basis)}.</div>`;
  }

  // makeChain is the virtual list of a chain: only the rows in view are
  // drawn, and only their pages are fetched.
  function makeChain(id, total) {
    const box = document.getElementById("chain"), spacer = document.getElementById("spacer");
    const pages = new Map(), drawn = new Map();
    let pending = new Set();
    const set = (n) => { total = n; spacer.style.height = (total * ROW + ROW) + "px"; };
    set(total);
    async function page(p) {
      if (pages.has(p) || pending.has(p)) return;
      pending.add(p);
      try {
        const d = await api("chain", { id, offset: p * PAGE, limit: PAGE });
        pages.set(p, d.rows);
      } catch (e) { showProblem(e.message); }
      pending.delete(p);
      draw();
    }
    function rowHTML(r) {
      const en = r.uj || r.kind ? `${energy(r.uj)} <span class="muted">${esc(r.provenance || "")}${r.coverage ? " · " + esc(r.coverage) : ""}</span>` : "";
      return `<span>${r.seq}</span><span>${r.index}</span><span class="${r.verdict === "ok" ? "v-ok" : "v-bad"}" title="${esc(r.reason)}">${esc(r.verdict)}</span><span>${esc(r.kind || "—")}</span>` +
        `<span class="d-${esc(r.decision || "")}">${esc(r.decision || r.status || "")}</span><span>${esc(r.code || r.coverage || "")}</span><span>${esc(r.tool || r.unit || "")}</span><span>${esc(r.tier || "")}</span><span>${en}</span><span title="${esc(r.summary)}">${esc(r.summary || r.reason || "")}</span>`;
    }
    let generation = 0;
    // inView is the rows to draw, of a chain of n, at the current scroll.
    const inView = (n) => [Math.max(0, Math.floor(box.scrollTop / ROW) - 5), Math.min(n - 1, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + 5)];
    function draw() {
      const [first, last] = inView(total);
      for (const [i, el] of drawn) if (i < first || i > last) { el.remove(); drawn.delete(i); }
      for (let i = first; i <= last; i++) {
        const p = Math.floor(i / PAGE), rows = pages.get(p);
        if (!rows) { page(p); continue; }
        const r = rows[i - p * PAGE];
        if (!r || drawn.has(i)) continue;
        const el = document.createElement("div");
        el.className = "r" + (r.verdict === "ok" ? "" : " bad");
        el.style.top = (ROW + i * ROW) + "px";
        el.dataset.seq = r.seq;
        el.innerHTML = rowHTML(r);
        el.onclick = () => { location.hash = sessionLink(id) + "/" + r.seq; };
        spacer.appendChild(el);
        drawn.set(i, el);
      }
    }
    box.addEventListener("scroll", draw);
    draw();
    return {
      // resize fetches again the pages in view (the last may have grown,
      // and a chain that was edited is judged again), then swaps them in
      // for what was drawn. It reports false when a later resize or a
      // failed fetch superseded it.
      async resize(n) {
        const gen = ++generation;
        const [first, last] = inView(n);
        const fresh = new Map();
        try {
          for (let p = Math.floor(first / PAGE); last >= 0 && p <= Math.floor(last / PAGE); p++) {
            fresh.set(p, (await api("chain", { id, offset: p * PAGE, limit: PAGE })).rows);
          }
        } catch (e) { showProblem(e.message); return false; }
        if (gen !== generation) return false;
        pages.clear();
        for (const [p, rows] of fresh) pages.set(p, rows);
        for (const [, el] of drawn) el.remove();
        drawn.clear();
        set(n);
        draw();
        return true;
      },
      pagesLoaded() { return pages.size; },
    };
  }

  // --- one receipt
  function closeDrawer() { const o = document.getElementById("overlay"); if (o) o.remove(); }
  async function openReceipt(id, seq) {
    closeDrawer();
    const o = document.createElement("div");
    o.className = "overlay"; o.id = "overlay";
    o.innerHTML = `<div class="drawer" id="drawer"><p class="muted">Loading receipt ${seq}…</p></div>`;
    o.onclick = (ev) => { if (ev.target === o) location.hash = sessionLink(id); };
    document.body.appendChild(o);
    const dr = o.querySelector("#drawer");
    let d;
    try { d = await api("receipt", { id, seq }); } catch (e) { dr.innerHTML = `<p class="v-bad">${esc(e.message)}</p>`; return; }
    const r = d.row, env = d.envelope, p = d.proof;
    const decoded = d.receipt ? `<h2>Decoded fields (signature verified)</h2><pre data-testid="decoded">${esc(JSON.stringify(d.receipt, null, 2))}</pre>`
      : `<h2>Decoded fields</h2><p class="v-bad">${esc(d.open_error)}</p>` + (d.unverified_receipt ? `<p>What the payload claims, <b>unverified</b>:</p><pre>${esc(JSON.stringify(d.unverified_receipt, null, 2))}</pre>` : "");
    dr.innerHTML = `<p><a href="${sessionLink(id)}">✕ close</a></p><h1>Receipt ${r.seq} of ${esc(id)}</h1>
<dl class="kv"><dt>verdict</dt><dd class="${r.verdict === "ok" ? "v-ok" : "v-bad"}" data-testid="verdict">${esc(r.verdict)}${r.reason ? ": " + esc(r.reason) : ""}</dd>
<dt>log index</dt><dd>${r.index}</dd><dt>chain hash</dt><dd>${esc(d.chain_hash)}</dd><dt>kind</dt><dd>${esc(r.kind || "—")}</dd>
<dt>energy</dt><dd>${energy(r.uj)} ${esc(r.provenance || "")} ${r.coverage ? "· coverage " + esc(r.coverage) : ""}</dd></dl>
${decoded}
<h2>Envelope (COSE_Sign1, ${env.bytes} bytes)</h2>
${env.error ? `<p class="v-bad">${esc(env.error)}</p>` : `<dl class="kv"><dt>alg</dt><dd>${env.alg} (EdDSA is -8)</dd><dt>kid</dt><dd>${esc(env.kid)}</dd><dt>protected</dt><dd>${esc(env.protected_hex)}</dd><dt>unprotected</dt><dd>${esc(env.unprotected_hex)}</dd><dt>signature</dt><dd>${esc(env.signature_hex)}</dd></dl>`}
<details><summary>payload and envelope hex</summary><pre>${esc(env.payload_hex)}</pre><pre>${esc(env.hex)}</pre></details>
<h2>Merkle inclusion proof against the latest signed checkpoint</h2>
<dl class="kv"><dt>verified</dt><dd class="${p.verified ? "v-ok" : "v-bad"}" data-testid="proof">${p.verified ? "yes: the leaf is in the signed tree" : "no"}${p.note ? " — " + esc(p.note) : ""}</dd>
<dt>tree size</dt><dd>${p.tree_size || "—"}</dd><dt>root</dt><dd>${esc(p.root || "—")}</dd><dt>leaf hash</dt><dd>${esc(p.leaf_hash)}</dd>
<dt>proof hashes</dt><dd>${p.hashes.map(esc).join("<br>") || "—"}</dd></dl>
${p.checkpoint ? `<h2>Checkpoint</h2><pre>${esc(p.checkpoint)}</pre>` : ""}`;
  }

  // --- grants
  async function grantsView() {
    const mine = {};
    view = mine;
    mine.refresh = () => grantsView();
    let d;
    try { d = await api("grants"); } catch (e) { main.innerHTML = ""; return showProblem(e.message); }
    if (view !== mine) return;
    const rules = (xs) => (xs || []).map((x) => `<code>${esc(x)}</code>`).join(" ") || `<span class="muted">—</span>`;
    let html = `<h1>Grants <span class="muted">(${d.grants.length})</span></h1><table id="grants-table"><thead><tr><th>Grant</th><th>State</th><th class="num">Budget</th><th class="num">Spent</th><th class="num">Left</th><th>Valid</th><th>Rules</th><th>Delegation chain (root first)</th></tr></thead><tbody>`;
    for (const g of d.grants) {
      const state = [g.active ? `<span class="pill v-ok">active</span><div class="muted">for ${(g.active_for || []).map(esc).join(", ")}</div>` : "", g.revoked ? `<span class="pill v-bad">revoked</span>` : "", g.expired ? `<span class="pill v-bad">expired</span>` : "",
        g.verified ? "" : `<span class="pill v-bad">does not verify</span>`].join(" ");
      html += `<tr data-grant="${esc(g.id)}"><td style="word-break:break-all">${esc(g.id)}<div class="muted">issuer ${esc(g.issuer || "?")}, subject ${esc(g.subject || "?")}</div>${g.error ? `<div class="v-bad">${esc(g.error)}</div>` : ""}</td><td>${state}</td>` +
        `<td class="num">${energy(g.budget_uj)}</td><td class="num">${energy(g.spent_uj)}</td><td class="num">${energy(g.left_uj)}</td>` +
        `<td>${g.not_before ? when(g.not_before * 1000) + "<br>→ " + when(g.not_after * 1000) : ""}</td>` +
        `<td class="rules"><div>allow ${rules(g.allow)}</div><div>ask ${rules(g.ask)}</div><div>deny ${rules(g.deny)}</div><div>tiers ${rules(g.tiers)}</div><div>roots ${rules(g.roots)}</div></td>` +
        `<td style="word-break:break-all">${g.chain.map((c) => esc(c.slice(0, 12)) + "…").join(" → ")}</td></tr>`;
    }
    if (!d.grants.length) html += `<tr><td colspan="8" class="muted">No grants: joule init issues one.</td></tr>`;
    main.innerHTML = html + "</tbody></table>";
  }

  // --- live updates
  function connect() {
    const es = new EventSource("api/events?token=" + encodeURIComponent(TOKEN));
    es.addEventListener("log", (ev) => {
      const size = JSON.parse(ev.data).size;
      live.classList.add("on");
      live.textContent = "live · " + size + " receipts in the log";
      live.dataset.size = size;
      if (logSize >= 0 && size !== logSize && view && view.refresh && !document.getElementById("overlay")) view.refresh();
      logSize = size;
    });
    es.addEventListener("problem", (ev) => showProblem(JSON.parse(ev.data)));
    es.onerror = () => { live.classList.remove("on"); live.textContent = "reconnecting…"; };
  }

  window.jouleUI = { view: () => view };
  if (!TOKEN) { showProblem("This page needs the token joule ui printed: open the whole URL it printed."); return; }
  connect();
  route();
})();
