// Shared by the viewer's pages. Every captured string reaches the page through
// textContent (el() below): nothing from a capture is ever parsed as HTML, and no
// captured value becomes a URL, an attribute that runs code, or a style.
"use strict";

const mcc = (() => {
  // Control characters (terminal escapes) and invisible direction overrides, shown
  // escaped as `mcc show` shows them, so text cannot read differently from what it is.
  const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

  function safe(text) {
    return String(text).replace(UNSAFE, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
    });
  }

  function el(tag, options, children) {
    const node = document.createElement(tag);
    const o = options || {};
    if (o.cls) node.className = o.cls;
    if (o.text !== undefined && o.text !== null) node.textContent = safe(o.text);
    if (o.title !== undefined && o.title !== null) node.title = safe(o.title);
    if (o.href) node.href = o.href; // only paths this page builds itself
    if (o.data) for (const [k, v] of Object.entries(o.data)) node.dataset[k] = String(v);
    for (const child of children || []) if (child) node.append(child);
    return node;
  }

  function int(n) {
    return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
  }

  function count(n, word) {
    return `${int(n)} ${word}${n === 1 ? "" : "s"}`;
  }

  // A reward or a field's number: up to 3 decimals, exponent form when very large or small.
  function num(x) {
    if (x === null || x === undefined) return "–";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return Number(x).toExponential(2);
    return Number(x).toLocaleString("en-US", { maximumFractionDigits: 3 });
  }

  function ms(n) {
    if (n === null || n === undefined) return "–";
    if (n >= 10000) return (n / 1000).toFixed(1) + " s";
    return n.toLocaleString("en-US", { maximumFractionDigits: 1 }) + " ms";
  }

  // Month-day and time: the year is in the title of the page's cells (`fullTime`).
  function time(t) {
    if (t === null || t === undefined) return "–";
    const d = new Date(t * 1000);
    const pad = (x) => String(x).padStart(2, "0");
    return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function fullTime(t) {
    return t === null || t === undefined ? null : new Date(t * 1000).toISOString();
  }

  async function json(url) {
    const reply = await fetch(url, { headers: { accept: "application/json" } });
    const body = await reply.json();
    if (!reply.ok) throw new Error(body.error || reply.statusText);
    return body;
  }

  function rolloutHref(id) {
    return "/rollouts/" + encodeURIComponent(id);
  }

  function live(ok) {
    const badge = document.getElementById("live");
    if (!badge) return;
    badge.classList.toggle("off", !ok);
    badge.textContent = ok ? "live" : "offline";
  }

  // Every page's header names the directory shown: as the user gave it, and the capture
  // directory it was read as when that differs (a demo directory's model-calls/).
  async function where() {
    const span = document.getElementById("where");
    if (!span) return;
    try {
      const info = await json("/api/info");
      const parts = [el("b", { text: info.directory }, [])];
      if (info.capture_dir !== info.directory) parts.push(el("span", { text: " → " + info.capture_dir }, []));
      span.replaceChildren(...parts);
      span.title = safe("capture directory: " + info.capture_dir +
        (info.rollouts_file ? "\nrollouts file: " + info.rollouts_file : ""));
    } catch (e) {
      // The page's own polling shows the server offline.
    }
  }

  document.addEventListener("DOMContentLoaded", where);

  return { safe, el, int, count, num, ms, time, fullTime, json, rolloutHref, live };
})();
