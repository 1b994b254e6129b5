// wanlab dashboard: charts (uPlot) and tables from /api/v1. Everything that
// comes from the API is put in the page as text (textContent), never as HTML.
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page;
  const enc = encodeURIComponent;
  const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"];

  // el builds an element; strings become text nodes.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (const c of kids) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  async function getJSON(url) {
    const r = await fetch(url);
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }

  function fmtRate(v) {
    if (v == null) return "";
    const u = [[1e9, "Gbit/s"], [1e6, "Mbit/s"], [1e3, "kbit/s"]];
    for (const [d, n] of u) if (Math.abs(v) >= d) return (v / d).toPrecision(3) + " " + n;
    return v.toFixed(0) + " bit/s";
  }
  const fmtMs = (v) => (v == null ? "" : (v * 1e3).toPrecision(3) + " ms");
  const fmtPct = (v) => (v == null ? "" : (v * 100).toPrecision(3) + "%");
  const fmtTime = (t) => new Date(t).toLocaleString();

  if (body.dataset.refresh) {
    // The grid and the interface list are rendered by the server: reload.
    setTimeout(() => location.reload(), +body.dataset.refresh * 1000);
  }

  // A chart: metrics of one unit, each split by test where a path has several.
  // scale turns a base-unit value into the axis' unit.
  function chartSpec(title, unit, scale, metrics, byTest) {
    return { title, unit, scale, metrics, byTest };
  }

  const range = { from: 0, to: 0 };
  function setRange(from, to) {
    range.from = from;
    range.to = to;
    const f = document.getElementById("from"), t = document.getElementById("to");
    if (f) f.value = localInput(from);
    if (t) t.value = localInput(to);
  }
  function localInput(s) {
    const d = new Date(s * 1000);
    d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
    return d.toISOString().slice(0, 16);
  }

  // draw loads every chart's series for the range and draws them.
  async function drawCharts(holder, specs, fetchSeries, markers) {
    holder.replaceChildren();
    const all = [];
    for (const spec of specs) {
      const box = el("div", { class: "chart", "data-chart": spec.title }, el("h3", {}, spec.title + " (" + spec.unit + ")"));
      holder.append(box);
      all.push(drawOne(box, spec, fetchSeries, markers));
    }
    await Promise.all(all);
  }

  async function drawOne(box, spec, fetchSeries, markers) {
    let tables = [], labels = [];
    try {
      // Every metric of the chart at once: the server answers them in parallel.
      const all = await Promise.all(spec.metrics.map((m) => fetchSeries(m.metric)));
      for (let i = 0; i < spec.metrics.length; i++) {
        const m = spec.metrics[i], pts = all[i];
        const groups = new Map();
        for (const p of pts) {
          // A test run once per family draws each family's series apart.
          const key = (spec.byTest ? m.label + " " + p.test : m.label) + (p.family ? " " + p.family : "");
          if (!groups.has(key)) groups.set(key, [[], []]);
          const g = groups.get(key);
          g[0].push(Date.parse(p.t) / 1000);
          g[1].push(spec.scale(p.value));
        }
        for (const [k, g] of groups) {
          tables.push(g);
          labels.push(k);
        }
      }
    } catch (e) {
      box.append(el("p", { class: "empty" }, "could not load: " + e.message));
      return;
    }
    if (tables.length === 0) {
      box.append(el("p", { class: "empty" }, "no data in this range"));
      return;
    }
    const data = uPlot.join(tables);
    const width = Math.max(box.clientWidth - 10, 280);
    const opts = {
      width, height: 220,
      scales: { x: { time: true, min: range.from, max: range.to } },
      series: [{}].concat(labels.map((l, i) => ({ label: l, stroke: palette[i % palette.length], width: 1.5, spanGaps: false, points: { size: 3 } }))),
      axes: [{}, { size: 60 }],
      cursor: { drag: { x: true, y: false }, sync: { key: "wanlab" } },
      hooks: {
        setSelect: [(u) => {
          if (u.select.width < 5) return;
          const a = u.posToVal(u.select.left, "x"), b = u.posToVal(u.select.left + u.select.width, "x");
          setRange(Math.floor(a), Math.ceil(b));
          reload();
        }],
        draw: [(u) => {
          const ctx = u.ctx;
          for (const m of markers) {
            const x = u.valToPos(m.t, "x", true);
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.save();
            ctx.strokeStyle = m.color;
            ctx.setLineDash([4, 3]);
            ctx.lineWidth = 1.5;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.restore();
          }
        }],
      },
    };
    const plot = new uPlot(opts, data, box);
    box.dataset.points = String(data[0].length);
    return plot;
  }

  let reload = () => {};

  function bindRange(run) {
    reload = run;
    document.querySelectorAll("[data-range]").forEach((b) => b.addEventListener("click", () => {
      document.querySelectorAll("[data-range]").forEach((x) => x.classList.remove("on"));
      b.classList.add("on");
      const now = Math.floor(Date.now() / 1000);
      setRange(now - +b.dataset.range, now);
      run();
    }));
    const apply = document.getElementById("apply");
    if (apply) apply.addEventListener("click", () => {
      const f = Date.parse(document.getElementById("from").value) / 1000;
      const t = Date.parse(document.getElementById("to").value) / 1000;
      if (!(f < t)) return;
      setRange(f, t);
      run();
    });
    // The last day, or since the service started if that is later (at
    // least a quarter of an hour): a new service's points are not lost
    // at the right edge of a day.
    const now = Math.floor(Date.now() / 1000);
    const started = +body.dataset.started || 0;
    setRange(Math.max(now - 86400, Math.min(started - 60, now - 900)), now);
    run();
  }

  function pathPage() {
    const src = body.dataset.from, dst = body.dataset.to;
    const base = "/api/v1/paths/" + enc(src) + "/" + enc(dst);
    const specs = [
      chartSpec("Throughput", "Mbit/s", (v) => v / 1e6, [{ metric: "throughput_bits_per_second", label: "throughput" }], true),
      chartSpec("Round-trip time", "ms", (v) => v * 1e3, [
        { metric: "rtt_min_seconds", label: "min" }, { metric: "rtt_median_seconds", label: "median" }, { metric: "rtt_max_seconds", label: "max" }]),
      chartSpec("One-way delay", "ms", (v) => v * 1e3, [
        { metric: "owd_forward_seconds", label: src + " → " + dst }, { metric: "owd_back_seconds", label: dst + " → " + src }]),
      chartSpec("Loss", "%", (v) => v * 100, [{ metric: "loss_ratio", label: "loss" }]),
      chartSpec("Jitter", "ms", (v) => v * 1e3, [{ metric: "jitter_seconds", label: "jitter" }]),
      chartSpec("End hosts' CPU during tests", "% of a core", (v) => v, [
        { metric: "src_cpu_percent", label: src }, { metric: "dst_cpu_percent", label: dst }]),
    ];
    const run = async () => {
      let markers = [];
      try {
        const al = await getJSON("/api/v1/alerts?since=" + range.from);
        for (const a of al.alerts) {
          if (a.src !== src || a.dst !== dst) continue;
          markers.push({ t: Date.parse(a.started) / 1000, color: "#c62828" });
          if (a.ended) markers.push({ t: Date.parse(a.ended) / 1000, color: "#2e7d32" });
        }
      } catch (e) { /* alerts need the archive: charts still draw */ }
      // Injected changes of the path's links (wanlab testbed set).
      const list = document.getElementById("changes");
      try {
        const ch = (await getJSON(base + "/changes?from=" + range.from + "&to=" + range.to)).changes;
        const rows = ch.map((c) => {
          markers.push({ t: Date.parse(c.t) / 1000, color: "#7b1fa2" });
          return el("tr", {}, el("td", {}, fmtTime(c.t)), el("td", {}, c.what), el("td", {}, c.directions.join(", ")));
        });
        list.replaceChildren(rows.length ? el("table", { class: "list" }, el("tr", {}, el("th", {}, "When"), el("th", {}, "Change"), el("th", {}, "Link directions")), ...rows)
          : el("p", {}, "No change of the path's links in this range."));
      } catch (e) {
        list.replaceChildren(el("p", { class: "empty" }, "could not load: " + e.message));
      }
      const fetchSeries = async (metric) =>
        (await getJSON(base + "/series?metric=" + metric + "&from=" + range.from + "&to=" + range.to + "&max=1500")).points;
      await drawCharts(document.getElementById("charts"), specs, fetchSeries, markers);
      body.dataset.drawn = String(Date.now());
    };
    bindRange(run);
    tests(base);
  }

  // tests lists the path's latest tests and the route's changes.
  async function tests(base) {
    const holder = document.getElementById("tests"), changes = document.getElementById("hopchanges");
    let recs;
    try {
      recs = (await getJSON(base + "/tests?limit=100")).tests;
    } catch (e) {
      holder.replaceChildren(el("p", { class: "empty" }, "could not load: " + e.message));
      return;
    }
    const t = el("table", { class: "list" }, el("tr", {}, ...["Started", "Test", "Status", "Result", "Source CPU", "Destination CPU", "Interfaces meanwhile"].map((h) => el("th", {}, h))));
    const routes = [];
    for (const r of recs) {
      const d = r.result || {};
      const res = d.result || d;
      let what = "", cpuS = "", cpuD = "";
      if (r.kind === "throughput" && res.end) {
        what = fmtRate(res.end.sum_received.bits_per_second);
        cpuS = res.end.cpu_utilization_percent.sender_host;
        cpuD = res.end.cpu_utilization_percent.receiver_host;
      } else if (r.kind === "transfer" && res.there) {
        what = fmtRate(res.there.bits_per_second) + " disk to disk";
        cpuS = res.there.cpu_utilization_percent.sender_host;
        cpuD = res.there.cpu_utilization_percent.receiver_host;
      } else if (r.kind === "disk") {
        what = "write " + fmtRate((res.write_bytes_per_second || 0) * 8) + ", read " + fmtRate((res.read_bytes_per_second || 0) * 8);
      } else if (r.kind === "trace" && res.hops) {
        const hops = res.hops.map((h) => h.addr || "*");
        what = hops.join(" → ");
        routes.push({ t: r.started, hops: what });
        if (r.status === "ok") continue; // traces have their own list below
      }
      const load = [];
      for (const host in d.interface_load || {}) {
        for (const ifc in d.interface_load[host]) {
          const l = d.interface_load[host][ifc];
          load.push(host + " " + ifc + ": in " + fmtRate(l.in_bits_per_second) + ", out " + fmtRate(l.out_bits_per_second));
        }
      }
      const num = (v) => (typeof v === "number" && v >= 0 ? v.toFixed(0) + "%" : "");
      t.append(el("tr", { class: r.status === "ok" ? "" : "alert" }, el("td", {}, fmtTime(r.started)), el("td", {}, r.test + " (" + r.kind + ")"),
        el("td", {}, r.status + (r.reason ? ": " + r.reason : "")), el("td", {}, what), el("td", {}, num(cpuS)), el("td", {}, num(cpuD)), el("td", {}, load.join("; "))));
    }
    holder.replaceChildren(t.rows.length > 1 ? t : el("p", {}, "No throughput, transfer or disk test of this path yet."));
    // The route now: the newest trace, where the service has none in memory
    // yet (it restarted).
    const route = document.getElementById("route");
    if (routes.length && !route.querySelector("ol")) {
      route.replaceChildren(el("ol", { class: "hops" }, ...routes[0].hops.split(" → ").map((h) => el("li", {}, h))));
    }
    // Route changes: each trace whose hop list differs from the one before.
    const list = el("table", { class: "list" }, el("tr", {}, el("th", {}, "Since"), el("th", {}, "Hops")));
    let prev = null, n = 0;
    for (const r of [...routes].reverse()) {
      if (r.hops === prev) continue;
      list.append(el("tr", { class: prev == null ? "" : "changed" }, el("td", {}, fmtTime(r.t)), el("td", {}, r.hops)));
      prev = r.hops;
      n++;
    }
    changes.replaceChildren(n ? list : el("p", {}, "No trace yet."));
  }

  function ifacePage() {
    const dev = body.dataset.device, ifc = body.dataset.iface;
    const base = "/api/v1/paths/" + enc(dev) + "/" + enc(ifc);
    const holder = document.getElementById("charts");
    const periods = [["Daily (1 day)", 86400], ["Weekly (7 days)", 7 * 86400], ["Monthly (31 days)", 31 * 86400], ["Yearly (365 days)", 365 * 86400]];
    const spec = (title) => chartSpec(title, "Mbit/s", (v) => v / 1e6, [{ metric: "in_bits_per_second", label: "in" }, { metric: "out_bits_per_second", label: "out" }]);
    // Every box first, so that each chart takes its own cell's width.
    const boxes = periods.map(() => holder.appendChild(el("div", {})));
    (async () => {
      for (let i = 0; i < periods.length; i++) {
        const [title, secs] = periods[i];
        const now = Math.floor(Date.now() / 1000);
        setRange(now - secs, now);
        const from = range.from, to = range.to;
        await drawCharts(boxes[i], [spec(title)], async (metric) =>
          (await getJSON(base + "/series?metric=" + metric + "&from=" + from + "&to=" + to + "&max=1000")).points, []);
      }
      body.dataset.drawn = String(Date.now());
    })();
  }

  // The grid: a new test shows its own default metric.
  const testPick = document.querySelector("form.pick select[name=test]");
  if (testPick) testPick.addEventListener("change", () => {
    testPick.form.querySelector("select[name=metric]").disabled = true;
    testPick.form.submit();
  });

  // Actions of a signed-in user: acknowledge an alert, run a test now. The
  // header tells the server that this page, not another site's, sends it.
  document.querySelectorAll("button.act").forEach((b) => b.addEventListener("click", async () => {
    const out = document.getElementById("result");
    let payload = {};
    if (b.dataset.test) payload = { test: b.dataset.test };
    if (b.dataset.note) {
      const input = b.previousElementSibling;
      payload = { note: input && input.classList.contains("note") ? input.value : "" };
    }
    b.disabled = true;
    try {
      const r = await fetch(b.dataset.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Wanlab-Request": "1" },
        body: JSON.stringify(payload),
      });
      const j = await r.json();
      if (!r.ok) throw new Error(j.error || r.statusText);
      out.textContent = "Done: " + j.done + " (by " + j.by + ")";
      out.className = "result";
    } catch (e) {
      out.textContent = "Refused: " + e.message;
      out.className = "result bad";
      b.disabled = false;
    }
  }));

  if (page === "path") pathPage();
  if (page === "iface") ifacePage();
})();
