// The conversation page of one rollout: turns, tool calls and results, per-call figures,
// a timeline and token bars, and a raw tab per call. It follows the capture file: every
// 2 s it asks for the rollout's summary and re-reads the conversation when it changed.
"use strict";

(() => {
  const { el, int, count, num, ms, time, json, live } = mcc;
  const rolloutId = decodeURIComponent(location.pathname.split("/").pop());
  const api = "/api/rollouts/" + encodeURIComponent(rolloutId);
  let version = "";
  let shownOutcome = "";
  let scrolled = false;

  const ROLE_NAMES = { system: "system", developer: "developer", user: "user", assistant: "assistant", tool: "tool" };

  function cutNote(n) {
    return n ? el("div", { cls: "cut", text: `… ${int(n)} more characters not shown (the raw tab has them)` }, []) : null;
  }

  function part(p) {
    switch (p.kind) {
      case "text":
        return el("div", { cls: "text" + (p.name === "refusal" ? " refusal" : ""), text: p.text }, [cutNote(p.cut)]);
      case "reasoning": {
        const d = el("details", { cls: "reasoning" }, [
          el("summary", { text: "reasoning" }, []),
          el("div", { cls: "text", text: p.text }, []),
          cutNote(p.cut),
        ]);
        return d;
      }
      case "tool_call":
        return el("div", { cls: "tool-call", data: { callId: p.call_id || "" } }, [
          el("div", { cls: "tool-head" }, [
            el("span", { cls: "tag", text: "tool call" }, []),
            el("b", { text: p.name || "?" }, []),
            el("span", { cls: "muted", text: p.call_id || "" }, []),
          ]),
          el("pre", { cls: "args", text: p.arguments === undefined ? "" : p.arguments }, []),
          cutNote(p.cut),
        ]);
      case "tool_result":
        return el("div", { cls: "tool-result" + (p.error ? " bad" : ""), data: { callId: p.call_id || "" } }, [
          el("div", { cls: "tool-head" }, [
            el("span", { cls: "tag", text: p.error ? "tool error" : "tool result" }, []),
            p.answers ? el("b", { text: p.answers }, []) : null,
            el("span", { cls: "muted", text: p.call_id || "" }, []),
          ]),
          el("pre", { cls: "result", text: p.text }, []),
          cutNote(p.cut),
        ]);
      case "attachment":
        return el("div", { cls: "placeholder", text: `[${p.name || "attachment"}${p.text ? ": " + p.text : ""}]` }, [cutNote(p.cut)]);
      default:
        return el("details", { cls: "other" }, [
          el("summary", { text: p.name || "item" }, []),
          el("pre", { text: p.text }, []),
          cutNote(p.cut),
        ]);
    }
  }

  function turn(t) {
    const role = ROLE_NAMES[t.role] || "other";
    return el("div", { cls: "turn role-" + role }, [
      el("div", { cls: "role", text: t.role }, []),
      el("div", { cls: "parts" }, t.parts.map(part)),
    ]);
  }

  // The system prompt and the tools: shown once, and again where a call changes them.
  // A long system prompt, and every tool's schema, start collapsed.
  const LONG_SYSTEM = 600;

  function toolDef(t) {
    const head = [el("b", { text: t.name || t.kind }, [])];
    if (t.name && t.kind !== "function") head.push(el("span", { cls: "muted", text: ` (${t.kind})` }, []));
    if (t.description) head.push(el("span", { cls: "muted", text: " — " + t.description.split("\n")[0].slice(0, 160) }, []));
    return el("details", { cls: "tool-def" }, [
      el("summary", {}, head),
      t.description ? el("div", { cls: "text", text: t.description }, []) : null,
      t.parameters ? el("pre", { cls: "args", text: t.parameters }, []) : null,
      cutNote(t.cut),
    ]);
  }

  function setupParts(s) {
    const chars = s.system.reduce((n, t) => n + t.parts.reduce((m, p) => m + p.text.length, 0), 0);
    const out = [];
    if (s.system.length) {
      const box = el("details", { cls: "system-prompt" }, [
        el("summary", { text: `system prompt · ${count(chars, "character")}` }, []),
        ...s.system.map(turn),
      ]);
      box.open = chars <= LONG_SYSTEM;
      out.push(box);
    }
    if (s.tools.length) {
      out.push(el("div", { cls: "tools" }, [
        el("div", { cls: "label", text: count(s.tools.length + s.tools_left_out, "tool") }, []),
        ...s.tools.map(toolDef),
        s.tools_left_out ? el("div", { cls: "cut", text: `… ${count(s.tools_left_out, "more tool")} not shown` }, []) : null,
      ]));
    }
    if (!out.length) out.push(el("div", { cls: "muted", text: "no system prompt, no tools" }, []));
    return out;
  }

  function figure(label, value, cls) {
    return el("span", { cls: "fig " + (cls || "") }, [el("span", { cls: "label", text: label }, []), el("span", { text: value }, [])]);
  }

  function callFigures(c) {
    const failed = c.error_category !== null;
    return el("div", { cls: "figures" }, [
      figure("model", c.model || "?"),
      figure("dialect", c.dialect || "?"),
      figure("status", c.status_code === null ? "–" : String(c.status_code), failed ? "bad" : "ok"),
      c.error_category ? figure("error", c.error_category, "bad") : null,
      figure("finish", c.finish_reason || c.response_status || "–"),
      figure("tokens in", int(c.tokens_in)),
      figure("out", int(c.tokens_out)),
      c.tokens_reasoning !== null ? figure("reasoning", int(c.tokens_reasoning)) : null,
      c.cached_tokens !== null ? figure("cached", int(c.cached_tokens)) : null,
      figure("TTFT", ms(c.ttft_ms)),
      figure("latency", ms(c.latency_ms)),
      c.capture_cut ? figure("capture", "cut at the byte cap", "warn") : null,
    ]);
  }

  // The error the call got, as its API stated it (message, then type, code, param).
  function callError(c) {
    const e = c.error;
    const facts = [["type", e.type], ["code", e.code], ["param", e.param]].filter(([, v]) => v != null);
    return el("div", { cls: "call-error" }, [
      el("div", { cls: "message" }, [el("span", { cls: "tag", text: "error" }, []), el("span", { text: e.message || "(no message)" }, [])]),
      facts.length ? el("div", { cls: "facts" }, facts.map(([k, v]) => figure(k, v))) : null,
    ]);
  }

  function rawSection(title, payload) {
    if (!payload) return null;
    return el("details", { cls: "raw-part", }, [
      el("summary", { text: title }, []),
      el("pre", { text: payload.text }, []),
      payload.cut ? el("div", { cls: "cut", text: `… ${int(payload.cut)} more characters not shown` }, []) : null,
    ]);
  }

  async function showRaw(box, index) {
    box.replaceChildren(el("div", { cls: "muted", text: "loading…" }, []));
    try {
      const raw = await json(`${api}/calls/${index}`);
      const parts = [
        rawSection("request", raw.request),
        rawSection("response", raw.response),
        rawSection("request (raw body)", raw.request_raw),
        rawSection("response (raw stream)", raw.response_raw),
      ].filter(Boolean);
      if (parts.length) parts[0].open = true;
      box.replaceChildren(...parts);
    } catch (e) {
      box.replaceChildren(el("div", { cls: "bad", text: "could not load: " + e.message }, []));
    }
  }

  function call(c) {
    const stated = c.error ? [callError(c)] : [];
    const shown = c.output.length ? c.output.map(turn) : (c.error ? [] : [el("div", { cls: "muted", text: "no response" }, [])]);
    const outputBox = el("div", { cls: "output" }, [...stated, ...shown]);
    const rawBox = el("div", { cls: "raw hidden" }, []);
    const tabs = el("div", { cls: "tabs" }, []);
    const convTab = el("button", { cls: "tab active", text: "conversation" }, []);
    const rawTab = el("button", { cls: "tab", text: "raw" }, []);
    convTab.type = rawTab.type = "button";
    convTab.addEventListener("click", () => {
      convTab.classList.add("active"); rawTab.classList.remove("active");
      outputBox.classList.remove("hidden"); rawBox.classList.add("hidden");
    });
    rawTab.addEventListener("click", () => {
      rawTab.classList.add("active"); convTab.classList.remove("active");
      rawBox.classList.remove("hidden"); outputBox.classList.add("hidden");
      if (!rawBox.dataset.loaded) { rawBox.dataset.loaded = "1"; showRaw(rawBox, c.index); }
    });
    tabs.append(convTab, rawTab);
    const gaps = c.gaps.map((g) => el("div", { cls: "call-gap", text: `gap: ${g.code}${g.detail ? " — " + g.detail : ""}` }, []));
    const card = el("article", { cls: "call" + (c.error_category ? " failed" : ""), data: { index: c.index } }, [
      el("header", { cls: "call-head" }, [el("h3", { text: `call ${c.index}` }, []), el("span", { cls: "muted", text: time(c.started_at) + (c.stream ? " · stream" : "") }, []), tabs]),
      callFigures(c),
      ...gaps,
      outputBox,
      rawBox,
    ]);
    card.id = "call-" + c.index;
    const input = el("div", { cls: "input" }, c.input.map(turn));
    const note = c.input_note ? el("div", { cls: "input-note", text: c.input_note }, []) : null;
    const setup = c.setup ? el("div", { cls: "setup setup-change", data: { call: c.index } }, [
      el("div", { cls: "input-note", text: `call ${c.index}: ${c.setup_note}` }, []),
      ...setupParts(c.setup),
    ]) : null;
    return el("div", { cls: "step" }, [setup, input, note, card]);
  }

  function damaged(d) {
    return el("div", { cls: "damaged" }, [
      el("b", { text: `line ${d.line}: damaged` }, []),
      el("span", { text: " — " + d.reason }, []),
    ]);
  }

  function timeline(all) {
    const calls = all.filter((c) => c.started_at !== null && c.completed_at !== null);
    const box = document.getElementById("timeline");
    if (!calls.length) { box.replaceChildren(el("div", { cls: "muted", text: "no calls" }, [])); return; }
    const t0 = Math.min(...calls.map((c) => c.started_at));
    const t1 = Math.max(...calls.map((c) => c.completed_at));
    const span = Math.max(t1 - t0, 1e-3);
    const maxTokens = Math.max(1, ...calls.map((c) => (c.tokens_in || 0) + (c.tokens_out || 0)));
    const rows = calls.map((c) => {
      const bar = el("div", { cls: "bar" + (c.error_category ? " bad" : ""), title: `call ${c.index}: ${ms(c.latency_ms)}, TTFT ${ms(c.ttft_ms)}` }, []);
      bar.style.left = ((c.started_at - t0) / span * 100).toFixed(3) + "%";
      bar.style.width = Math.max((c.completed_at - c.started_at) / span * 100, 0.4).toFixed(3) + "%";
      if (c.ttft_ms !== null && c.latency_ms) {
        const mark = el("div", { cls: "ttft", title: `first token after ${ms(c.ttft_ms)}` }, []);
        mark.style.left = Math.min(c.ttft_ms / c.latency_ms * 100, 100).toFixed(2) + "%";
        bar.append(mark);
      }
      const tin = el("div", { cls: "tin", title: `${int(c.tokens_in)} tokens in` }, []);
      const tout = el("div", { cls: "tout", title: `${int(c.tokens_out)} tokens out` }, []);
      tin.style.width = ((c.tokens_in || 0) / maxTokens * 100).toFixed(2) + "%";
      tout.style.width = ((c.tokens_out || 0) / maxTokens * 100).toFixed(2) + "%";
      const label = el("a", { cls: "tl-label", href: "#call-" + c.index, text: `${c.index} ${c.model || c.dialect || ""}` }, []);
      return el("div", { cls: "tl-row" }, [
        label,
        el("div", { cls: "track" }, [bar]),
        el("div", { cls: "tokens" }, [tin, tout]),
        el("span", { cls: "tl-fig muted", text: `${int(c.tokens_in)} / ${int(c.tokens_out)}` }, []),
      ]);
    });
    const axis = el("div", { cls: "tl-row axis" }, [
      el("span", { cls: "tl-label muted", text: "call" }, []),
      el("div", { cls: "track scale" }, [el("span", { text: "0" }, []), el("span", { text: ms(span * 1000) }, [])]),
      el("div", { cls: "tokens legend" }, [el("span", { cls: "key-in", text: "in" }, []), el("span", { cls: "key-out", text: "out" }, [])]),
      el("span", { cls: "tl-fig muted", text: "tokens" }, []),
    ]);
    box.replaceChildren(axis, ...rows);
  }

  // The reward and fields of the rollout's row in the rollouts file (rollouts.jsonl), from
  // the summary: redrawn on every poll, since a collector writes the row when the rollout
  // ends. No row, nothing shown. Values as text (the API has cut long ones).
  function fieldText(v) {
    if (v === null || v === undefined) return "–";
    return typeof v === "number" ? num(v) : String(v);
  }

  function outcomeItem(name, text, cls, title) {
    return el("span", { cls: "field" + (cls ? " " + cls : ""), title: title || name }, [
      el("span", { cls: "name", text: name + " " }, []),
      el("b", { text }, []),
    ]);
  }

  function outcome(s) {
    const text = JSON.stringify([s.reward, s.fields]);
    if (text === shownOutcome) return;
    shownOutcome = text;
    const items = [];
    const f = s.fields;
    if (f) {
      if (typeof s.reward === "number") items.push(outcomeItem("reward", num(s.reward), "reward"));
      else if (f.reward === undefined) items.push(outcomeItem("reward", "–", "reward", "no reward in its row"));
      else items.push(outcomeItem("reward", fieldText(f.reward), "reward warn", "reward: not a number"));
      for (const [name, v] of Object.entries(f)) if (name !== "reward") items.push(outcomeItem(name, fieldText(v)));
    }
    document.getElementById("outcome").replaceChildren(...items);
  }

  function render(body) {
    const conv = body.conversation;
    const s = body.summary;
    outcome(s);
    document.getElementById("rid").textContent = mcc.safe(conv.rollout_id);
    document.title = "mcc view: " + mcc.safe(conv.rollout_id);
    document.getElementById("totals").textContent =
      `${count(conv.calls, "call")} · ${count(s.errors, "error")} · ${int(s.tokens_in)} tokens in · ${int(s.tokens_out)} out · ${ms(s.latency_ms)} in calls`;
    const notes = [];
    if (conv.incomplete) notes.push(el("div", { cls: "gap", text: "gap: model_call_capture_incomplete — a capture of this rollout failed; calls may be missing" }, []));
    if (conv.damaged) notes.push(el("div", { cls: "gap", text: `${count(conv.damaged, "damaged line")} (shown where they are)` }, []));
    for (const n of conv.notes) notes.push(el("div", { cls: "note", text: n }, []));
    document.getElementById("notes").replaceChildren(...notes);
    const setup = document.getElementById("setup");
    setup.classList.toggle("hidden", !conv.setup);
    setup.replaceChildren(...(conv.setup ? [el("h2", { text: "System prompt and tools" }, []), ...setupParts(conv.setup)] : []));
    const calls = conv.items.filter((i) => i.kind === "call");
    timeline(calls);
    const items = conv.items.map((i) => (i.kind === "call" ? call(i) : damaged(i)));
    if (!items.length) items.push(el("div", { cls: "muted", text: "No calls captured yet." }, []));
    document.getElementById("conversation").replaceChildren(...items);
  }

  async function load() {
    try {
      const body = await json(api);
      version = key(body.summary);
      render(body);
      live(true);
      if (!scrolled && location.hash.startsWith("#call-")) {
        // A link to one call (from search): its card exists only now.
        scrolled = true;
        const target = document.getElementById(location.hash.slice(1));
        if (target) target.scrollIntoView();
      }
    } catch (e) {
      live(false);
      document.getElementById("conversation").replaceChildren(el("div", { cls: "bad", text: "could not load: " + e.message }, []));
    }
  }

  function key(s) {
    return [s.calls, s.damaged, s.incomplete, s.last_call].join("/");
  }

  async function follow() {
    try {
      const s = await json(api + "/summary");
      live(true);
      outcome(s);
      if (key(s) !== version) await load();
    } catch (e) {
      live(false);
    }
  }

  // Previous/next rollout in the table's natural order; keys k/← and j/→.
  function setLink(id, target) {
    const link = document.getElementById(id);
    link.classList.toggle("disabled", !target);
    if (target) { link.href = mcc.rolloutHref(target); link.dataset.target = target; }
    else { link.removeAttribute("href"); delete link.dataset.target; }
  }

  async function neighbours() {
    try {
      const n = await json(api + "/neighbours");
      setLink("prev-rollout", n.previous);
      setLink("next-rollout", n.next);
    } catch (e) {
      live(false);
    }
  }

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (e.target.closest && e.target.closest("input, textarea, select, [contenteditable]")) return;
    const id = { j: "next-rollout", ArrowRight: "next-rollout", k: "prev-rollout", ArrowLeft: "prev-rollout" }[e.key];
    const link = id && document.getElementById(id);
    if (link && link.href) { e.preventDefault(); location.href = link.href; }
  });

  load();
  neighbours();
  setInterval(follow, 2000);
  setInterval(neighbours, 10000);
})();
