// The search page: plain DOM, no framework, no build step. Everything a document holds is put on the page
// with textContent or as the text of elements made here: nothing it contains is ever parsed as HTML.
"use strict";

const DEBOUNCE_MS = 200;
const SNIPPET_CHARS = 280;
const $ = (id) => document.getElementById(id);
const form = $("search-form"), input = $("q"), kSelect = $("k"), statusLine = $("status");
const results = $("results"), filterBox = $("filters"), filterInputs = $("filter-inputs");
const keyBox = $("key-box"), keyInput = $("key");

let timer = null, controller = null, sequence = 0;
keyInput.value = sessionStorage.getItem("semsearch-key") || "";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function api(path, options = {}) {
  const headers = {};
  if (keyInput.value) headers.Authorization = "Bearer " + keyInput.value;
  const response = await fetch(path, { ...options, headers });
  const body = await response.json().catch(() => ({ error: { message: response.statusText } }));
  if (response.status === 401 || response.status === 403) keyBox.hidden = false;
  return { ok: response.ok, status: response.status, body };
}

function queryWords(query) {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length >= 2);
  return [...new Set(words)].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// Text with the query's words in <mark> elements: text nodes and elements, never HTML.
function marked(text, words) {
  const fragment = document.createDocumentFragment();
  if (!words.length) {
    fragment.append(text);
    return fragment;
  }
  const pattern = new RegExp(words.map(escapeRegExp).join("|"), "giu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    fragment.append(text.slice(last, match.index), el("mark", null, match[0]));
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

// A window of the text around the first query word found (the whole text when short).
function snippet(text, words) {
  if (text.length <= SNIPPET_CHARS) return text;
  const lower = text.toLowerCase();
  const found = words.map((w) => lower.indexOf(w)).filter((i) => i >= 0);
  let start = found.length ? Math.max(0, Math.min(...found) - 80) : 0;
  if (start > 0) start = text.indexOf(" ", start) + 1 || start;
  const end = Math.min(text.length, start + SNIPPET_CHARS);
  return (start > 0 ? "… " : "") + text.slice(start, end) + (end < text.length ? " …" : "");
}

// Where a hit is in its file (path:line, path (page 3), path#anchor, then the heading path), linked: the path
// made relative to the page and percent-encoded, so no document's text becomes a scheme (javascript:) or markup.
function placeLink(hit) {
  const location = hit.location;
  const path = String((hit.metadata && hit.metadata.path) || hit.id);
  let label = path;
  let fragment = "";
  if (location.line_start != null) {
    label += ":" + location.line_start;
    fragment = "#L" + location.line_start;
  } else if (location.page != null) {
    label += " (page " + location.page + ")";
    fragment = "#page=" + location.page;
  }
  if (location.anchor) {
    label += "#" + location.anchor;
    fragment = "#" + encodeURIComponent(location.anchor);
  }
  if (Array.isArray(location.headings) && location.headings.length) label += "  " + location.headings.join(" > ");
  const link = el("a", "place", label);
  link.href = "./" + path.split("/").map(encodeURIComponent).join("/") + fragment;
  return link;
}

function render(hits, query) {
  const words = queryWords(query);
  const items = hits.map((hit) => {
    const item = el("li");
    item.tabIndex = 0;
    item.dataset.id = hit.id;
    const head = el("div", "hit-head");
    const title = el("span", "title");
    title.append(marked(hit.title || hit.id, words));
    head.append(title, el("span", "score", "score " + Number(hit.score).toFixed(3)));
    const passage = el("p", "passage");
    const text = hit.passage && typeof hit.passage.text === "string" ? hit.passage.text : hit.text;
    passage.append(marked(snippet(text || "", words), words));
    const meta = el("div", "meta");
    if (hit.location) meta.append(placeLink(hit));
    meta.append(el("span", "doc-id", "id " + hit.id));
    for (const [name, value] of Object.entries(hit.metadata || {})) {
      meta.append(el("span", null, name + ": " + (typeof value === "string" ? value : JSON.stringify(value))));
    }
    item.append(head, passage, meta);
    return item;
  });
  results.replaceChildren(...items);
}

function showStatus(text, isError = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("error", isError);
}

function whereConditions() {
  const conditions = [];
  for (const box of filterInputs.querySelectorAll("input")) {
    const value = box.value.trim();
    if (!value) continue;
    const match = value.match(/^(!=|<=|>=|=|<|>)\s*(.*)$/);
    conditions.push(box.dataset.field + (match ? match[1] + match[2] : "=" + value));
  }
  return conditions;
}

async function search() {
  clearTimeout(timer);
  const query = input.value.trim();
  const mine = ++sequence;
  if (controller) controller.abort();
  if (!query) {
    results.replaceChildren();
    showStatus("");
    return;
  }
  controller = new AbortController();
  const params = new URLSearchParams({ q: query, k: kSelect.value });
  for (const condition of whereConditions()) params.append("where", condition);
  const started = performance.now();
  let answer;
  try {
    answer = await api("/search?" + params, { signal: controller.signal });
  } catch (error) {
    if (error.name !== "AbortError") showStatus("no answer from the server: " + error.message, true);
    return;
  }
  if (mine !== sequence) return; // a later search has started
  if (!answer.ok) {
    results.replaceChildren();
    showStatus(answer.body.error ? answer.body.error.message : "error " + answer.status, true);
    return;
  }
  const ms = performance.now() - started;
  render(answer.body.hits, query);
  const count = answer.body.hits.length;
  showStatus(`${count} result${count === 1 ? "" : "s"} in ${ms.toFixed(0)} ms (search ${answer.body.took_ms.toFixed(1)} ms)`);
  results.dataset.query = query;
}

function later() {
  clearTimeout(timer);
  timer = setTimeout(search, DEBOUNCE_MS);
}

const INFO_FIELDS = [
  ["documents", "Documents"], ["model_name", "Model"], ["transform", "Transform"], ["dims", "Dims"],
  ["power", "Power"], ["index_type", "Index"], ["rerank", "Rerank"], ["quantize", "Encoder"],
  ["updated", "Updated"],
];

const SVG = "http://www.w3.org/2000/svg";
const SPECTRUM_SIDES = [["raw", "#c0392b"], ["transformed", "#2471a3"]];

function svgNode(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

// The eigenvalue spectrum (shares of the variance, log scale), raw against transformed, drawn from the numbers
// the API returns: only Number() of them reaches the SVG.
function spectrumSvg(isotropy) {
  const width = 220, height = 110, pad = 4;
  const svg = svgNode("svg", { id: "spectrum", viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(svgNode("title", {}));
  svg.firstChild.textContent = "Eigenvalue spectrum: raw (red) and transformed (blue), log scale";
  const series = SPECTRUM_SIDES.map(([side, colour]) => [
    ((isotropy[side] || {}).spectrum || []).map(Number).filter((v) => v > 0), colour]);
  const all = series.flatMap(([values]) => values);
  if (all.length === 0) return svg;
  const top = Math.log10(Math.max(...all)), bottom = Math.log10(Math.min(...all));
  const span = Math.max(top - bottom, 1e-9);
  for (const [values, colour] of series) {
    if (values.length < 2) continue;
    const points = values.map((v, i) => {
      const x = pad + (i / (values.length - 1)) * (width - 2 * pad);
      const y = pad + ((top - Math.log10(v)) / span) * (height - 2 * pad);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    svg.append(svgNode("polyline", { points: points.join(" "), fill: "none", stroke: colour, "stroke-width": 1.5 }));
  }
  return svg;
}

function isotropyRows(isotropy) {
  const rows = [];
  for (const [side, label] of [["raw", "Raw vectors"], ["transformed", "Transformed"]]) {
    const figures = isotropy[side];
    if (!figures || figures.mean_cosine === null) continue;
    rows.push(el("dt", null, label), el("dd", null,
      `mean cosine ${Number(figures.mean_cosine).toFixed(3)}, effective rank ${Number(figures.effective_rank).toFixed(1)}, ` +
      `top direction ${(100 * Number(figures.top1_variance)).toFixed(1)}%`));
  }
  if (isotropy.advice) rows.push(el("dt", null, "Whitening"), el("dd", null, `${isotropy.advice.whitening}: ${isotropy.advice.why}`));
  const figure = el("dd");
  figure.append(spectrumSvg(isotropy));
  rows.push(el("dt", null, "Spectrum"), figure);
  return rows;
}

async function loadInfo() {
  const answer = await api("/info");
  const list = $("info-list");
  if (!answer.ok) {
    list.replaceChildren(el("dd", null, answer.body.error ? answer.body.error.message : "unavailable"));
    return;
  }
  const info = answer.body;
  const rows = [];
  for (const [key, label] of INFO_FIELDS) {
    if (info[key] === undefined || info[key] === null) continue;
    rows.push(el("dt", null, label), el("dd", null, typeof info[key] === "object" ? JSON.stringify(info[key]) : info[key]));
  }
  if (info.isotropy) rows.push(...isotropyRows(info.isotropy));
  list.replaceChildren(...rows);
  const fields = info.fields || [];
  filterInputs.replaceChildren(...fields.map((field) => {
    const label = el("label", null, field);
    const box = el("input");
    box.type = "text";
    box.dataset.field = field;
    box.placeholder = "any";
    box.addEventListener("input", later);
    label.append(box);
    return label;
  }));
  filterBox.hidden = fields.length === 0;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
input.addEventListener("input", later);
kSelect.addEventListener("change", search);
keyInput.addEventListener("change", () => {
  sessionStorage.setItem("semsearch-key", keyInput.value);
  loadInfo();
  search();
});

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (event.key === "/" && !typing) {
    event.preventDefault();
    input.focus();
    input.select();
  } else if (event.key === "Escape") {
    if (document.activeElement === input) {
      input.value = "";
      search();
    } else {
      input.focus();
    }
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const items = [...results.children];
    if (!items.length || (typing && document.activeElement !== input)) return;
    const at = items.indexOf(document.activeElement);
    const next = event.key === "ArrowDown" ? Math.min(at + 1, items.length - 1) : at - 1;
    event.preventDefault();
    (next < 0 ? input : items[next]).focus();
  }
});

if (window.matchMedia("(max-width: 720px)").matches) document.querySelector("aside details").open = false;
loadInfo();
if (input.value.trim()) search();
