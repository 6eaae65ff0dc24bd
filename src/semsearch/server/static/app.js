// The search page: plain DOM, no framework, no build step. Everything a document holds is put on the page
// with textContent or as the text of elements made here: nothing it contains is ever parsed as HTML.
"use strict";

const DEBOUNCE_MS = 200;
const $ = (id) => document.getElementById(id);
const form = $("search-form"), input = $("q"), kSelect = $("k"), statusLine = $("status");
const results = $("results"), filterBox = $("filters"), filterInputs = $("filter-inputs");
const keyBox = $("key-box"), keyInput = $("key");
const facetBox = $("facets"), pager = $("pager"), previousButton = $("previous"), nextButton = $("next");
const pageLabel = $("page");
const FACET_FIELDS = 6; // facet counts asked for the first fields the index lists

// What the results show: a search, or the documents like one (similar); which page, of which generation.
let view = { kind: "search", id: null, offset: 0, generation: null };
let fieldNames = [];
let paging = false; // the server pages and finds similar documents (its /info names a max_offset)
let restarted = false; // a page asked of a generation the index has left: started again at page 1

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

// A hit's snippet (the server's: its text and the [start, end) spans to mark) as text nodes and <mark> elements:
// the text is only ever textContent, never HTML. A "meaning" mark (no word matched: the sentence closest in
// meaning) has its own class.
function snippetNode(hit) {
  const snippet = hit.snippet && typeof hit.snippet.text === "string" ? hit.snippet : { text: hit.text || "", highlights: [] };
  const text = snippet.text, fragment = document.createDocumentFragment();
  const whole = typeof hit.text === "string" ? hit.text : text;
  if (!whole.startsWith(text)) fragment.append("… ");
  let last = 0;
  for (const [start, end] of snippet.highlights || []) {
    const from = Math.max(Number(start), last), to = Math.min(Number(end), text.length);
    if (!(to > from)) continue;
    fragment.append(text.slice(last, from), el("mark", snippet.kind === "meaning" ? "meaning" : null, text.slice(from, to)));
    last = to;
  }
  fragment.append(text.slice(last));
  if (!whole.endsWith(text)) fragment.append(" …");
  return fragment;
}

// Where a hit is in its file (path:line, path (page 3), path (row 7), path#anchor, then the heading path),
// linked: the path made relative to the page and percent-encoded, so no document's text becomes a scheme
// (javascript:) or markup.
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
  } else if (location.row != null) {
    label += " (row " + location.row + ")";
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

function render(hits) {
  const items = hits.map((hit) => {
    const item = el("li");
    item.tabIndex = 0;
    item.dataset.id = hit.id;
    const head = el("div", "hit-head");
    head.append(el("span", "title", hit.title || hit.id), el("span", "score", "score " + Number(hit.score).toFixed(3)));
    if (paging) {
      const like = el("button", "similar", "similar");
      like.type = "button";
      like.title = "Documents like this one";
      like.addEventListener("click", () => showSimilar(hit.id));
      head.append(like);
    }
    const passage = el("p", "passage");
    passage.append(snippetNode(hit));
    if (hit.snippet && hit.snippet.kind === "meaning") {
      passage.title = "No word of the query is here: the marked sentence is the closest in meaning";
    }
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
  if (restarted && !isError) text += " (the index changed: back to the first page)";
  restarted = false;
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

// The facet counts as buttons: a value's button puts it in that field's filter and searches again.
function renderFacets(facets) {
  const groups = [];
  for (const [field, values] of Object.entries(facets || {})) {
    // the API's order (most frequent first, ties by value) again: an object lists integer-like keys (years)
    // first, in numeric order, whatever order the JSON gave them
    const entries = Object.entries(values || {}).sort(
      ([a, m], [b, n]) => Number(n) - Number(m) || (a < b ? -1 : a > b ? 1 : 0));
    if (!entries.length) continue;
    const group = el("div", "facet");
    group.append(el("span", "facet-field", field));
    for (const [value, count] of entries) {
      const button = el("button", "facet-value", `${value} (${Number(count)})`);
      button.type = "button";
      button.dataset.field = field;
      button.dataset.value = value;
      button.addEventListener("click", () => {
        const box = filterInputs.querySelector(`input[data-field="${CSS.escape(field)}"]`);
        if (box) box.value = "=" + value;
        view = { kind: "search", id: null, offset: 0, generation: null };
        search();
      });
      group.append(button);
    }
    groups.push(group);
  }
  facetBox.replaceChildren(...groups);
  facetBox.hidden = groups.length === 0;
}

function renderPager(count) {
  const k = Number(kSelect.value);
  previousButton.disabled = view.offset === 0;
  nextButton.disabled = count < k;
  pageLabel.textContent = "page " + (Math.floor(view.offset / k) + 1);
  pager.hidden = !paging || (view.offset === 0 && count < k);
}

function turnPage(step) {
  const k = Number(kSelect.value);
  view.offset = Math.max(0, view.offset + step * k);
  (view.kind === "similar" ? showSimilar(view.id, true) : search(true));
}

// One request of the results' view; a page of a generation the index has left (409) starts again at page 1.
async function fetchView(path, params, paging) {
  clearTimeout(timer);
  const mine = ++sequence;
  if (controller) controller.abort();
  controller = new AbortController();
  params.set("k", kSelect.value);
  for (const condition of whereConditions()) params.append("where", condition);
  if (view.offset) params.set("offset", String(view.offset));
  if (view.offset && view.generation !== null) params.set("generation", String(view.generation));
  const started = performance.now();
  let answer;
  try {
    answer = await api(path + "?" + params, { signal: controller.signal });
  } catch (error) {
    if (error.name !== "AbortError") showStatus("no answer from the server: " + error.message, true);
    return null;
  }
  if (mine !== sequence) return null; // a later request has started
  if (answer.status === 409 && view.offset) {
    restarted = true;
    view.kind === "similar" ? showSimilar(view.id) : search();
    return null;
  }
  if (!answer.ok) {
    results.replaceChildren();
    pager.hidden = true;
    showStatus(answer.body.error ? answer.body.error.message : "error " + answer.status, true);
    return null;
  }
  if (answer.body.generation !== undefined) view.generation = answer.body.generation;
  return { body: answer.body, ms: performance.now() - started };
}

async function search(paging = false) {
  const query = input.value.trim();
  if (!paging) view = { kind: "search", id: null, offset: 0, generation: null };
  if (!query) {
    ++sequence;
    results.replaceChildren();
    facetBox.replaceChildren();
    pager.hidden = true;
    showStatus("");
    return;
  }
  const params = new URLSearchParams({ q: query });
  for (const field of fieldNames.slice(0, FACET_FIELDS)) params.append("facets", field);
  const answer = await fetchView("/search", params, paging);
  if (!answer) return;
  const { body, ms } = answer;
  render(body.hits);
  renderFacets(body.facets);
  renderPager(body.hits.length);
  const count = body.hits.length;
  showStatus(`${count} result${count === 1 ? "" : "s"} in ${ms.toFixed(0)} ms (search ${body.took_ms.toFixed(1)} ms)`);
  results.dataset.query = query;
}

async function showSimilar(id, paging = false) {
  if (!paging) view = { kind: "similar", id, offset: 0, generation: null };
  const answer = await fetchView("/documents/" + encodeURIComponent(id) + "/similar", new URLSearchParams(), paging);
  if (!answer) return;
  const { body } = answer;
  render(body.hits);
  facetBox.replaceChildren();
  renderPager(body.hits.length);
  showStatus(`${body.hits.length} documents like ${id}`);
  results.dataset.similar = id;
}

function later() {
  clearTimeout(timer);
  timer = setTimeout(() => search(), DEBOUNCE_MS);
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
  fieldNames = fields;
  paging = Boolean(info.server && info.server.max_offset);
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
kSelect.addEventListener("change", () => search());
previousButton.addEventListener("click", () => turnPage(-1));
nextButton.addEventListener("click", () => turnPage(1));
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
