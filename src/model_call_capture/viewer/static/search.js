// Full-text search of the rollouts' messages from the index page's search box: the table
// filters on ids, models and errors itself; this asks /api/search (bounded on the server
// in matches and time) for the rollouts whose messages hold the text, and lists them
// under the filters. A new keystroke aborts the search under way, which ends it on the
// server too.
"use strict";

(() => {
  const { el, int, json, rolloutHref } = mcc;
  const MIN_CHARS = 2;
  const box = document.getElementById("found");
  const input = document.getElementById("q");
  let running = null;
  let typing;

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
    try {
      const reply = await fetch("/api/search?" + params, { signal: running.signal, headers: { accept: "application/json" } });
      const body = await reply.json();
      if (!reply.ok) throw new Error(body.error || reply.statusText);
      render(body, Boolean(after));
    } catch (e) {
      if (e.name === "AbortError") return;
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
      return;
    }
    typing = setTimeout(() => search(query.slice(0, 200), null), 300);
  }

  input.addEventListener("input", changed);
  if (input.value) changed();
})();
