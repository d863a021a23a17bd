// Totals and histograms above the rollouts table, drawn as inline SVG from the numbers
// /api/rollouts returns (`overview`): no library, nothing fetched from elsewhere. Every
// label is set with textContent; the numbers only ever become sizes.
"use strict";

const mccCharts = (() => {
  const { el, int, num } = mcc;
  const NS = "http://www.w3.org/2000/svg";
  const WIDTH = 320;
  const HEIGHT = 110;

  function svg(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = mcc.safe(text);
    return node;
  }

  function binLabel(name, b) {
    const unit = name === "latency_ms" ? " ms" : "";
    if (b.low === b.high) return num(b.low) + unit;
    if (b.low === 0 && b.high === 1 && name !== "reward") return "under 1" + unit;
    if (name === "reward") return `${num(b.low)} to ${num(b.high)}`;
    return `${int(b.low)}–${int(b.high - 1)}${unit}`; // power-of-two bins: [low, high)
  }

  function histogram(h) {
    const most = Math.max(1, ...h.bins.map((b) => b.count));
    const caption = `${h.title} · ${int(h.count)}` + (h.bins.length ? ` · tallest bar ${int(most)}` : "");
    const figure = el("figure", { cls: "chart", data: { chart: h.name, count: h.count } }, [
      el("figcaption", { text: caption }, []),
    ]);
    if (!h.bins.length) {
      figure.append(el("div", { cls: "no-data muted", text: "no data yet" }, []));
      return figure;
    }
    const plot = HEIGHT - 18;
    const step = WIDTH / Math.max(h.bins.length, 8); // a lone bar stays a bar
    const left = (WIDTH - step * h.bins.length) / 2;
    const values = h.bins.every((b) => b.low === b.high); // one bar per value: each labelled
    const root = svg("svg", {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": h.title, class: "chart-svg",
    });
    h.bins.forEach((b, i) => {
      const tall = b.count ? Math.max(2, (b.count / most) * (plot - 4)) : 0;
      const rect = svg("rect", {
        class: "bar", x: (left + i * step + 1).toFixed(1), y: (plot - tall).toFixed(1),
        width: Math.max(1, step - 2).toFixed(1), height: tall.toFixed(1), "data-count": b.count,
      });
      rect.append(svg("title", {}, `${binLabel(h.name, b)}: ${int(b.count)}`));
      root.append(rect);
      if (values || h.bins.length === 1) {
        root.append(svg("text", { class: "tick", x: (left + (i + 0.5) * step).toFixed(1), y: HEIGHT - 4,
          "text-anchor": "middle" }, binLabel(h.name, b)));
      }
    });
    root.append(svg("line", { class: "axis", x1: 0, y1: plot, x2: WIDTH, y2: plot }));
    if (!values && h.bins.length > 1) {
      const last = h.bins[h.bins.length - 1];
      root.append(svg("text", { class: "tick", x: left, y: HEIGHT - 4 }, binLabel(h.name, h.bins[0])));
      root.append(svg("text", { class: "tick", x: WIDTH - left, y: HEIGHT - 4, "text-anchor": "end" },
        binLabel(h.name, last)));
    }
    figure.append(root);
    return figure;
  }

  function tile(name, label, value) {
    return el("div", { cls: "tile", data: { total: name } }, [
      el("div", { cls: "value", text: value }, []),
      el("div", { cls: "label muted", text: label }, []),
    ]);
  }

  function render(overview) {
    const t = overview.totals;
    document.getElementById("sums").replaceChildren(
      tile("rollouts", "rollouts", int(t.rollouts)),
      tile("calls", "calls", int(t.calls)),
      tile("errors", "calls with errors", int(t.errors)),
      tile("tokens_in", "tokens in", int(t.tokens_in)),
      tile("tokens_out", "tokens out", int(t.tokens_out)),
      tile("mean_reward", `mean reward (${int(t.rewarded)} rewarded)`, num(t.mean_reward)),
    );
    document.getElementById("charts").replaceChildren(...overview.histograms.map(histogram));
  }

  // What the viewer made of the collector's rollouts file: shown, never hidden.
  function file(f) {
    const box = document.getElementById("rollouts-file");
    if (!f.path) {
      box.replaceChildren(el("span", { text: "no rollouts.jsonl beside the captures: no rewards" }, []));
      return;
    }
    const facts = [`${int(f.joined)} of ${int(f.rows)} rows joined to rollouts`];
    if (f.without_capture) facts.push(`${int(f.without_capture)} for rollouts without captures`);
    if (f.damaged) facts.push(mcc.count(f.damaged, "damaged line"));
    if (f.duplicates) facts.push(mcc.count(f.duplicates, "duplicate row"));
    if (f.rewards_not_numbers) facts.push(mcc.count(f.rewards_not_numbers, "reward") + " not a number");
    if (f.fields_left_out) facts.push(`${int(f.fields_left_out)} values of further fields not shown`);
    const bad = f.damaged || f.duplicates || f.rewards_not_numbers || f.note;
    const head = el("span", { cls: bad ? "warn" : "", text: `${f.path}: ${facts.join(", ")}` }, []);
    const parts = [head];
    if (f.note) parts.push(el("div", { cls: "warn", text: f.note }, []));
    if (f.problems.length) {
      parts.push(el("details", { cls: "problems" }, [
        el("summary", { text: "which lines" }, []),
        el("ul", {}, f.problems.map((p) => el("li", { text: p }, []))),
      ]));
    }
    box.replaceChildren(...parts);
  }

  return { render, file, num };
})();
