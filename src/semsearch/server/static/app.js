// The search page: plain DOM, no framework, no build step. Everything a document holds is put on the page
// with textContent or as the text of elements made here: nothing it contains is ever parsed as HTML.
"use strict";

const DEBOUNCE_MS = 200;
const $ = (id) => document.getElementById(id);
const form = $("search-form"), input = $("q"), kSelect = $("k"), statusLine = $("status");
const results = $("results"), filterBox = $("filters"), filterInputs = $("filter-inputs");
const keyBox = $("key-box"), keyInput = $("key");
const facetBox = $("facets"), pager = $("pager"), previousButton = $("previous"), nextButton = $("next");
const pageLabel = $("page"), modeSelect = $("mode"), indexBox = $("index-box"), indexSelect = $("index");
const FACET_FIELDS = 6; // facet counts asked for the first fields the index lists

// What the results show: a search, or the documents like one (similar); which page, of which generation.
let view = { kind: "search", id: null, offset: 0, generation: null };
let fieldNames = [];
let paging = false; // the server pages and finds similar documents (its /info names a max_offset)
let restarted = false; // a page asked of a generation the index has left: started again at page 1
let base = ""; // the chosen index's routes: "" (the server's default) or /indexes/NAME

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
  const response = await fetch(path === "/indexes" ? path : base + path, { ...options, headers });
  const body = await response.json().catch(() => ({ error: { message: response.statusText } }));
  if (response.status === 401 || response.status === 403) keyBox.hidden = false;
  return { ok: response.ok, status: response.status, body };
}

// A hit's snippet (the server's: its text and the [start, end) spans to mark) as text nodes and <mark> elements:
// the text is only ever textContent, never HTML. The snippet is cut from the place's passage (a snippet of kind
// "passage": no word matched, the place was found by meaning, its passage's opening).
function passageText(hit) {
  if (hit.passage && typeof hit.passage.text === "string") return hit.passage.text;
  return typeof hit.text === "string" ? hit.text : "";
}

function snippetNode(hit) {
  const snippet = hit.snippet && typeof hit.snippet.text === "string" ? hit.snippet : { text: passageText(hit), highlights: [] };
  const text = snippet.text, fragment = document.createDocumentFragment();
  const whole = passageText(hit) || text;
  if (!whole.startsWith(text)) fragment.append("… ");
  let last = 0;
  for (const [start, end] of snippet.highlights || []) {
    const from = Math.max(Number(start), last), to = Math.min(Number(end), text.length);
    if (!(to > from)) continue;
    fragment.append(text.slice(last, from), el("mark", null, text.slice(from, to)));
    last = to;
  }
  fragment.append(text.slice(last));
  if (!whole.endsWith(text)) fragment.append(" …");
  return fragment;
}

// Where a hit is in its file (path:line, path (page 3), path (row 7), path#anchor, then the heading path),
// linked to the server's address of that place (location.url: its /files route, built by the server from the
// document's path, percent-encoded) and never to anything a document's text could make a scheme of.
function placeLink(hit) {
  const location = hit.location || {};
  let label = String((hit.metadata && hit.metadata.path) || hit.id);
  if (location.line_start != null) label += ":" + location.line_start;
  else if (location.page != null) label += " (page " + location.page + ")";
  else if (location.row != null) label += " (row " + location.row + ")";
  if (location.anchor) label += "#" + location.anchor;
  if (Array.isArray(location.headings) && location.headings.length) label += "  " + location.headings.join(" > ");
  const url = typeof location.url === "string" && location.url.startsWith("/files/") ? base + location.url : null;
  if (!url) return el("span", "place", label);
  const link = el("a", "place", label);
  link.href = url;
  link.addEventListener("click", (event) => {
    if (keyInput.value) {  // a keyed server: a link cannot send the key, so the file is fetched with it
      event.preventDefault();
      openWithKey(url);
    }
  });
  return link;
}

async function openWithKey(url) {
  const [path, fragment] = [url.split("#")[0], url.includes("#") ? "#" + url.split("#")[1] : ""];
  const response = await fetch(path, { headers: { Authorization: "Bearer " + keyInput.value } });
  if (!response.ok) {
    showStatus("cannot open " + path + ": " + response.status, true);
    return;
  }
  window.location.assign(URL.createObjectURL(await response.blob()) + fragment);
}

// The hits grouped by document, in the order each document first comes: a document's several places (hits of
// one id) under it. A hit of the JSON before places is a document with its one place.
function byDocument(hits) {
  const groups = new Map();
  for (const hit of hits) {
    if (!groups.has(hit.id)) groups.set(hit.id, []);
    groups.get(hit.id).push(hit);
  }
  return [...groups.values()];
}

function placeNode(hit, several) {
  const node = el("div", "hit-place");
  const where = el("div", "where");
  if (hit.location || (hit.metadata && hit.metadata.path)) where.append(placeLink(hit));
  if (several) where.append(el("span", "score", Number(hit.score).toFixed(3)));
  const passage = el("p", "passage");
  passage.append(snippetNode(hit));
  if (hit.snippet && hit.snippet.kind === "passage") {
    passage.title = "No word of the query is here: found by meaning";
  }
  node.append(where, passage);
  return node;
}

function render(hits) {
  const items = byDocument(hits).map((places) => {
    const hit = places[0];
    const item = el("li");
    item.tabIndex = 0;
    item.dataset.id = hit.id;
    item.dataset.places = String(places.length);
    const head = el("div", "hit-head");
    head.append(el("span", "title", hit.title || hit.id), el("span", "score", "score " + Number(hit.score).toFixed(3)));
    if (paging) {
      const like = el("button", "similar", "similar");
      like.type = "button";
      like.title = "Documents like this one";
      like.addEventListener("click", () => showSimilar(hit.id));
      head.append(like);
    }
    const meta = el("div", "meta");
    meta.append(el("span", "doc-id", "id " + hit.id));
    for (const [name, value] of Object.entries(hit.metadata || {})) {
      meta.append(el("span", null, name + ": " + (typeof value === "string" ? value : JSON.stringify(value))));
    }
    item.append(head, ...places.map((place) => placeNode(place, places.length > 1)), meta);
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

const OPERATOR = /^(!=|<=|>=|=|<|>)\s*(.*)$/;
const RANGE = /^([^.\s]*|\d+(?:\.\d+)?)\.\.([^.\s]*|\d+(?:\.\d+)?)$/; // LOW..HIGH, either side left open
const BOUND = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$|^\d{4}-\d{2}-\d{2}/; // a number or a date

// A filter box's text as `where` conditions: a value (field=value), an operator and a value, or a range
// LOW..HIGH of numbers or dates (field>=LOW and field<HIGH; a side left empty is open).
function boxConditions(field, text) {
  const value = text.trim();
  if (!value) return [];
  const range = value.match(RANGE);
  if (range && (range[1] || range[2]) && [range[1], range[2]].every((side) => !side || BOUND.test(side))) {
    return [...(range[1] ? [field + ">=" + range[1]] : []), ...(range[2] ? [field + "<" + range[2]] : [])];
  }
  const match = value.match(OPERATOR);
  return [field + (match ? match[1] + match[2] : "=" + value)];
}

let extraWhere = []; // conditions from the address on fields the page has no box for: kept as they came

function whereConditions() {
  const conditions = [...extraWhere];
  for (const box of filterInputs.querySelectorAll("input")) conditions.push(...boxConditions(box.dataset.field, box.value));
  return conditions;
}

// The boxes from `where` conditions (the address's): a field's >= and < pair as its range LOW..HIGH.
function fillBoxes(conditions) {
  for (const box of filterInputs.querySelectorAll("input")) box.value = "";
  extraWhere = [];
  const byField = new Map();
  for (const condition of conditions) {
    const field = fieldNames.filter((name) => condition.startsWith(name) && OPERATOR.test(condition.slice(name.length)))
      .sort((a, b) => b.length - a.length)[0];
    if (field === undefined) {
      extraWhere.push(condition);
      continue;
    }
    if (!byField.has(field)) byField.set(field, []);
    byField.get(field).push(condition.slice(field.length));
  }
  for (const [field, parts] of byField) {
    const box = filterInputs.querySelector(`input[data-field="${CSS.escape(field)}"]`);
    const low = parts.find((part) => part.startsWith(">=")), high = parts.find((part) => /^<[^=]/.test(part));
    if (parts.length === 2 && low && high) box.value = low.slice(2) + ".." + high.slice(1);
    else if (parts.length === 1) box.value = parts[0];
    else {
      box.value = parts[0];
      extraWhere.push(...parts.slice(1).map((part) => field + part));
    }
  }
}

const FEW_VALUES = 8; // a field offering more values than this gets ranges (numbers, dates) or no buttons
const DATE = /^\d{4}-\d{2}-\d{2}/;

function facetButton(field, label, count, filter) {
  const button = el("button", "facet-value", `${label} (${Number(count)})`);
  button.type = "button";
  button.dataset.field = field;
  button.addEventListener("click", () => {
    const box = filterInputs.querySelector(`input[data-field="${CSS.escape(field)}"]`);
    if (box) box.value = filter;
    view = { kind: "search", id: null, offset: 0, generation: null };
    search(false, "commit");
  });
  return button;
}

// The facet counts as buttons, for the fields of few values: a value's button puts it in that field's filter
// and searches again. A field of many numbers or dates gets ranges instead (asked of /facets/ranges: their
// counts are exact); one of many other values (a path, a title) none. Returns the fields to ask ranges of.
function renderFacets(facets, stats) {
  const groups = [], ranged = [];
  for (const [field, values] of Object.entries(facets || {})) {
    // the API's order (most frequent first, ties by value) again: an object lists integer-like keys (years)
    // first, in numeric order, whatever order the JSON gave them
    const entries = Object.entries(values || {}).sort(
      ([a, m], [b, n]) => Number(n) - Number(m) || (a < b ? -1 : a > b ? 1 : 0));
    if (!entries.length) continue;
    if (entries.length > FEW_VALUES) {
      if ((stats && stats[field]) || entries.every(([value]) => DATE.test(value))) ranged.push(field);
      continue;
    }
    const group = el("div", "facet");
    group.dataset.field = field;
    group.append(el("span", "facet-field", field));
    for (const [value, count] of entries) {
      const button = facetButton(field, value, count, "=" + value);
      button.dataset.value = value;
      group.append(button);
    }
    groups.push(group);
  }
  facetBox.replaceChildren(...groups);
  facetBox.hidden = groups.length === 0;
  return ranged;
}

const shortDate = (text) => (DATE.test(text) ? text.slice(0, 10) : text);

async function renderRanges(fields, mine) {
  const params = new URLSearchParams({ q: input.value.trim() });
  for (const field of fields) params.append("fields", field);
  for (const condition of whereConditions()) params.append("where", condition);
  if (modeSelect.value) params.set("mode", modeSelect.value);
  const answer = await api("/facets/ranges?" + params);
  if (mine !== sequence || !answer.ok) return;
  for (const [field, ranges] of Object.entries(answer.body.ranges || {})) {
    const group = el("div", "facet facet-ranges");
    group.dataset.field = field;
    group.append(el("span", "facet-field", field));
    for (const range of ranges) {
      const low = range.where.find((c) => c.startsWith(field + ">=")), high = range.where.find((c) => c.startsWith(field + "<"));
      const filter = (low ? low.slice(field.length + 2) : "") + ".." + (high ? high.slice(field.length + 1) : "");
      const button = facetButton(field, `${shortDate(String(range.from))} – ${shortDate(String(range.to))}`, range.count, filter);
      button.dataset.range = filter;
      group.append(button);
    }
    facetBox.append(group);
  }
  facetBox.hidden = facetBox.children.length === 0;
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
  (view.kind === "similar" ? showSimilar(view.id, true, "commit") : search(true, "commit"));
}

// ---- the search in the address: /?q=...&where=...&mode=...&k=...&offset=... (or similar=ID), so a search can be
// bookmarked, shared and gone back to. A search typed as you type replaces the entry it started (one entry per
// search, not per key); a search asked for (Enter, a facet, a page, a filter given) is an entry of its own.

function addressOfView() {
  const params = new URLSearchParams();
  if (!indexBox.hidden && indexSelect.value) params.set("index", indexSelect.value);
  if (view.kind === "similar") params.set("similar", view.id);
  else if (input.value.trim()) params.set("q", input.value.trim());
  for (const condition of whereConditions()) params.append("where", condition);
  if (modeSelect.value && view.kind !== "similar") params.set("mode", modeSelect.value);
  if (kSelect.value !== "10") params.set("k", kSelect.value);
  if (view.offset) params.set("offset", String(view.offset));
  const text = params.toString();
  return "/" + (text ? "?" + text : "");
}

function remember(how) {
  if (how === "restore") return;
  const address = addressOfView(), typing = how === "typing";
  const here = window.location.pathname + window.location.search;
  const state = history.state || {};
  if (address === here) {
    if (!typing && state.typing) history.replaceState({ typing: false }, "", address);
    return;
  }
  if (state.typing) history.replaceState({ typing }, "", address);
  else history.pushState({ typing }, "", address);
}

// The page as the address says (its load, back and forward): the boxes filled, the search run again.
async function restoreAddress() {
  const params = new URLSearchParams(window.location.search);
  const index = params.get("index");
  if (!indexBox.hidden && index && index !== indexSelect.value && [...indexSelect.options].some((o) => o.value === index)) {
    indexSelect.value = index;
    chooseIndex();
    await loadInfo();  // the filter boxes of that index's fields
  }
  input.value = params.get("q") || "";
  const k = params.get("k") || "10";
  if (![...kSelect.options].some((option) => option.value === k) && /^\d+$/.test(k)) kSelect.append(el("option", null, k));
  kSelect.value = k;
  modeSelect.value = [...modeSelect.options].some((option) => option.value === params.get("mode")) ? params.get("mode") : "";
  fillBoxes(params.getAll("where"));
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  if (params.get("similar")) {
    view = { kind: "similar", id: params.get("similar"), offset, generation: null };
    return showSimilar(view.id, true, "restore");
  }
  view = { kind: "search", id: null, offset, generation: null };
  return search(true, "restore");
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
  return { body: answer.body, ms: performance.now() - started, mine };
}

async function search(paging = false, how = "commit") {
  const query = input.value.trim();
  if (!paging) view = { kind: "search", id: null, offset: 0, generation: null };
  remember(how);
  if (!query) {
    ++sequence;
    results.replaceChildren();
    facetBox.replaceChildren();
    pager.hidden = true;
    showStatus("");
    return;
  }
  const params = new URLSearchParams({ q: query });
  if (modeSelect.value) params.set("mode", modeSelect.value);
  for (const field of fieldNames.slice(0, FACET_FIELDS)) params.append("facets", field);
  const answer = await fetchView("/search", params, paging);
  if (!answer) return;
  const { body, ms, mine } = answer;
  render(body.hits);
  const ranged = renderFacets(body.facets, body.facet_stats);
  if (ranged.length) renderRanges(ranged, mine);
  renderPager(body.hits.length);
  const count = body.hits.length, documents = results.children.length;
  const places = count === documents ? "" : ` (${count} places)`;
  showStatus(`${documents} result${documents === 1 ? "" : "s"}${places} in ${ms.toFixed(0)} ms (search ${body.took_ms.toFixed(1)} ms)`);
  results.dataset.query = query;
}

async function showSimilar(id, paging = false, how = "commit") {
  if (!paging) view = { kind: "similar", id, offset: 0, generation: null };
  remember(how);
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
  timer = setTimeout(() => search(false, "typing"), DEBOUNCE_MS);
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

// The indexes the key reaches (GET /indexes): a choice of them where there are several, the address's first.
async function loadIndexes() {
  const answer = await api("/indexes");
  const names = answer.ok && Array.isArray(answer.body.indexes) ? answer.body.indexes.map(String) : [];
  indexBox.hidden = names.length < 2;
  indexSelect.replaceChildren(...names.map((name) => Object.assign(el("option", null, name), { value: name })));
  const asked = new URLSearchParams(window.location.search).get("index");
  const chosen = names.includes(asked) ? asked : names.includes(answer.body.default) ? answer.body.default : names[0];
  if (chosen !== undefined) indexSelect.value = chosen;
  chooseIndex();
}

function chooseIndex() {
  base = indexBox.hidden || !indexSelect.value ? "" : "/indexes/" + encodeURIComponent(indexSelect.value);
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
  search(false, "commit");
});
input.addEventListener("input", later);
kSelect.addEventListener("change", () => search(false, "commit"));
modeSelect.addEventListener("change", () => search(false, "commit"));
window.addEventListener("popstate", () => restoreAddress());
previousButton.addEventListener("click", () => turnPage(-1));
nextButton.addEventListener("click", () => turnPage(1));
keyInput.addEventListener("change", async () => {
  sessionStorage.setItem("semsearch-key", keyInput.value);
  await loadIndexes();
  await loadInfo();
  search();
});
indexSelect.addEventListener("change", async () => {
  chooseIndex();
  await loadInfo();
  search(false, "commit");
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
// the address's search once the filter boxes exist (loadInfo makes them from the index's fields)
loadIndexes()
  .then(loadInfo)
  .then(() => (window.location.search ? restoreAddress() : input.value.trim() && search(false, "typing")));
