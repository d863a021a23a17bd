// The rollouts table: filters and sort in the URL, one page at a time from
// /api/rollouts, refreshed every 2 s so new rollouts and calls appear by themselves.
// The collector's fields (rollouts.jsonl) are columns after the reward, as the API names
// them; totals and charts above the table are drawn by charts.js.
"use strict";

(() => {
  const { el, int, ms, time, fullTime, json, rolloutHref, live } = mcc;
  const params = new URLSearchParams(location.search);
  const state = {
    q: params.get("q") || "",
    model: params.get("model") || "",
    dialect: params.get("dialect") || "",
    error: params.get("error") || "",
    reward_min: params.get("reward_min") || "",
    reward_max: params.get("reward_max") || "",
    sort: params.get("sort") || "rollout_id",
    order: params.get("order") || "asc",
    page: Number(params.get("page")) || 1,
  };
  let lastBody = "";
  let fields = []; // the rollouts file's columns besides the reward, as last shown

  function query() {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v && !(k === "page" && v === 1)) q.set(k, v);
    return q.toString();
  }

  function setOptions(select, values, chosen) {
    // The fixed choices stay; the captured values come after them, as text.
    const wanted = values.join("\n");
    if (select.dataset.values !== wanted) {
      const fixed = Array.from(select.querySelectorAll("option[data-fixed]"));
      const found = values.map((v) => { const o = el("option", { text: v }, []); o.value = v; return o; });
      select.replaceChildren(...fixed, ...found);
      select.dataset.values = wanted;
    }
    select.value = chosen;
  }

  function cell(text, cls, title) {
    return el("td", { text, cls, title }, []);
  }

  function gapTitle(r) {
    const why = [];
    if (r.damaged) why.push(mcc.count(r.damaged, "damaged line"));
    if (r.capture_gaps) why.push(mcc.count(r.capture_gaps, "gap") + " recorded in lines");
    if (r.incomplete) why.push("marked incomplete");
    if (r.note) why.push("not read to its end: " + r.note);
    return why.length ? why.join("; ") : null;
  }

  // A field's value as text: numbers formatted, text as written (already cut by the API).
  function value(v) {
    if (v === null || v === undefined) return "–";
    if (typeof v === "number") return mccCharts.num(v);
    return String(v);
  }

  function rewardCell(r) {
    const written = r.fields ? r.fields.reward : undefined;
    if (r.reward !== null && r.reward !== undefined) return cell(mccCharts.num(r.reward), "num reward");
    if (written === undefined) return cell("–", "num reward", r.fields ? "no reward in its row" : "no row in the rollouts file");
    return cell(value(written), "num reward warn", "not a number");
  }

  function row(r) {
    const link = el("a", { text: r.rollout_id, href: rolloutHref(r.rollout_id) }, []);
    const pending = !r.indexed;
    const extra = fields.map((name) => cell(value(r.fields ? r.fields[name] : null), "field", name));
    const tr = el("tr", { cls: pending ? "pending" : "", data: { id: r.rollout_id } }, [
      el("td", { cls: "id" }, [link]),
      rewardCell(r),
      ...extra,
      cell(pending ? "…" : int(r.calls), "num"),
      cell(pending ? "…" : int(r.errors), "num" + (r.errors ? " bad" : ""), r.error_categories.join(", ")),
      cell(pending ? "…" : int(r.gaps) + (r.note ? " ⚠" : ""), "num" + (r.gaps || r.note ? " warn" : ""), gapTitle(r)),
      cell(int(r.tokens_in), "num"),
      cell(int(r.tokens_out), "num"),
      cell(ms(r.latency_ms), "num"),
      cell(r.models.join(", "), "names"),
      cell(r.dialects.join(", "), "names"),
      cell(time(r.first_call), "when", fullTime(r.first_call)),
      cell(time(r.last_call), "when", fullTime(r.last_call)),
    ]);
    return tr;
  }

  // The field columns follow the file: one header per field, after the reward's.
  function setFields(names) {
    const wanted = names.filter((n) => n !== "reward");
    if (JSON.stringify(wanted) === JSON.stringify(fields)) return;
    fields = wanted;
    const rewardTh = document.querySelector("th[data-sort='reward']");
    for (const th of document.querySelectorAll("th.field")) th.remove();
    let after = rewardTh;
    for (const name of fields) {
      const th = el("th", { cls: "field", text: name, data: { sort: "field:" + name } }, []);
      th.addEventListener("click", () => sortBy(th.dataset.sort));
      after.after(th);
      after = th;
    }
  }

  function render(page) {
    setFields(page.fields);
    mccCharts.render(page.overview);
    mccCharts.file(page.rollouts_file);
    setOptions(document.getElementById("model"), page.models, state.model);
    setOptions(document.getElementById("dialect"), page.dialects, state.dialect);
    setOptions(document.getElementById("error"), page.error_categories, state.error);
    const body = document.querySelector("#rollouts tbody");
    const rows = page.rollouts.map(row);
    const none = state.q ? "No rollout id, model or error holds this text." : "No rollout matches.";
    if (!rows.length) rows.push(el("tr", { cls: "empty" }, [el("td", { text: none }, [])]));
    body.replaceChildren(...rows);
    const pages = Math.max(1, Math.ceil(page.total / page.page_size));
    document.getElementById("pageinfo").textContent = `page ${page.page} of ${pages}`;
    document.getElementById("prev").disabled = page.page <= 1;
    document.getElementById("next").disabled = page.page >= pages;
    const reading = page.indexed < page.rollouts_in_directory ? ` (reading ${int(page.rollouts_in_directory - page.indexed)} more)` : "";
    // With a search, the table's count says what it matched on; search.js adds beside it
    // how many rollouts hold the text in their messages.
    const by = state.q ? " by id, model or error" : "";
    document.getElementById("count").textContent =
      `${int(page.total)} of ${int(page.rollouts_in_directory)} rollouts${by}${reading}`;
    for (const th of document.querySelectorAll("th[data-sort]")) {
      th.classList.toggle("sorted", th.dataset.sort === state.sort);
      th.classList.toggle("desc", th.dataset.sort === state.sort && state.order === "desc");
    }
  }

  async function load() {
    const q = query();
    history.replaceState(null, "", q ? "?" + q : location.pathname);
    try {
      const page = await json("/api/rollouts" + (q ? "?" + q : ""));
      const text = JSON.stringify(page);
      if (text !== lastBody) { lastBody = text; render(page); }
      live(true);
    } catch (e) {
      live(false);
    }
  }

  function sortBy(key) {
    state.order = state.sort === key && state.order === "asc" ? "desc" : "asc";
    state.sort = key;
    state.page = 1;
    load();
  }

  function bind() {
    const form = document.getElementById("filters");
    form.q.value = state.q;
    form.addEventListener("submit", (e) => e.preventDefault());
    let typing;
    form.q.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { state.q = form.q.value; state.page = 1; load(); }, 200);
    });
    for (const name of ["model", "dialect", "error"]) {
      form[name].addEventListener("change", () => { state[name] = form[name].value; state.page = 1; load(); });
    }
    for (const name of ["reward_min", "reward_max"]) {
      form[name].value = state[name];
      form[name].addEventListener("input", () => {
        clearTimeout(typing);
        typing = setTimeout(() => { state[name] = form[name].value; state.page = 1; load(); }, 200);
      });
    }
    for (const th of document.querySelectorAll("th[data-sort]")) {
      th.addEventListener("click", () => sortBy(th.dataset.sort));
    }
    document.getElementById("prev").addEventListener("click", () => { state.page -= 1; load(); });
    document.getElementById("next").addEventListener("click", () => { state.page += 1; load(); });
  }

  bind();
  load();
  setInterval(load, 2000);
})();
