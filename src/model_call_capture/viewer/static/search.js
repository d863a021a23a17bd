// Full-text search of the rollouts' messages from the index page's search box: the table
// filters on ids, models and errors itself; this asks /api/search (bounded on the server
// in matches and time) for the rollouts whose messages hold the text, and lists them
// under the filters; the table's count line says how many it found (#found-count), so
// the box gives one answer: "0 of 4 rollouts by id, model or error · 1 found in
// messages". A new keystroke aborts the search under way, which ends it on the server too.
"use strict";

(() => {
  const { el, int, json, rolloutHref } = mcc;
  const MIN_CHARS = 2;
  const box = document.getElementById("found");
  const input = document.getElementById("q");
  const tally = document.getElementById("found-count");
  let running = null;
  let typing;

  // The count line's second half: hidden while no message search is asked for.
  function say(text) {
    tally.textContent = text ? " · " + text : "";
    tally.classList.toggle("hidden", !text);
  }

  function hit(h) {
    const link = el("a", { text: h.rollout_id, href: rolloutHref(h.rollout_id) + "#call-" + int(h.call_index) }, []);
    const at = h.match_start;
    const end = at + box.dataset.query.length;
    const snippet = el("span", { cls: "snippet" }, [
      el("span", { text: h.snippet.slice(0, at) }, []),
      el("mark", { text: h.snippet.slice(at, end) }, []),
      el("span", { text: h.snippet.slice(end) }, []),
    ]);
    return el("li", { data: { id: h.rollout_id } }, [
      link,
      el("span", { cls: "muted", text: ` call ${int(h.call_index)} · ${h.where} · ${h.role} ` }, []),
      snippet,
    ]);
  }

  function render(result, append) {
    const list = append ? box.querySelector("ol") : el("ol", {}, []);
    for (const h of result.hits) list.append(hit(h));
    const more = result.resume_after
      ? el("button", { cls: "search-on", text: "search on" }, [])
      : null;
    if (more) {
      more.type = "button";
      more.addEventListener("click", () => search(result.query, result.resume_after));
    }
    const count = list.children.length;
    const sofar = result.resume_after ? " so far" : "";
    say(count ? `${int(count)} found in messages${sofar}` : `none found in messages${sofar}`);
    box.replaceChildren(
      el("h2", { text: "Found in messages" }, []),
      el("div", { cls: "muted note", text: `${int(count)} rollout${count === 1 ? "" : "s"} · ${result.note}` }, [more]),
      list,
    );
    box.classList.remove("hidden");
  }

  async function search(query, after) {
    if (running) running.abort();
    running = new AbortController();
    box.dataset.query = query;
    const params = new URLSearchParams({ q: query });
    if (after) params.set("after", after);
    const note = box.querySelector(".note");
    if (note && after) note.textContent = "searching on…";
    if (!after) say("searching messages…");
    try {
      const reply = await fetch("/api/search?" + params, { signal: running.signal, headers: { accept: "application/json" } });
      const body = await reply.json();
      if (!reply.ok) throw new Error(body.error || reply.statusText);
      render(body, Boolean(after));
    } catch (e) {
      if (e.name === "AbortError") return;
      say("message search failed");
      box.replaceChildren(el("div", { cls: "bad", text: "search failed: " + e.message }, []));
      box.classList.remove("hidden");
    }
  }

  function changed() {
    clearTimeout(typing);
    const query = input.value;
    if (query.trim().length < MIN_CHARS) {
      if (running) running.abort();
      box.classList.add("hidden");
      box.replaceChildren();
      say("");
      return;
    }
    if (running) running.abort(); // its answer is for the text before this keystroke
    say("searching messages…");
    typing = setTimeout(() => search(query.slice(0, 200), null), 300);
  }

  input.addEventListener("input", changed);
  if (input.value) changed();
})();
