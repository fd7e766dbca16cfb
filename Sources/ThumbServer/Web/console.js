// console.js — thumbd's operator console (served at /console/console.js; the page is GET /console).
// Three views by URL hash: "#/" a virtualized grid of every asset (its cells reused through
// ThumbdCells, as a client app would), "#/asset/{encoded path}" one asset with every kind's crop
// and its focus point (a click sets it), "#/charts" the daemon's metrics (console-charts.js).
// When a view has finished loading it sets document.body.dataset.ready to "grid", "asset" or
// "charts" (browser tests wait on it); it is removed whenever a view starts (re)loading.

import { ThumbdCells, thumbHashToDataURL, base64ToBytes } from "/v1/thumbd-cells.js"
import { COLORS, SVG, startCharts } from "/console/console-charts.js"

const SOURCE_SPEC = "1024x1024,fit" // an inline spec: the whole source, large enough to click on
const JSON_WAIT_MS = 5000 // a JSON answer needs a cached thumbnail: wait for its render
const KIND_SCALE = 2
const GRID_CELL_MAX_PX = 180 // a kind's cell is shown at its points, shrunk to fit this
const GRID_CAPTION_PX = 20
const GRID_GAP_PX = 8
const ASSET_PAGE_LIMIT = 1000
const KIND_FIGURE_MAX_PX = 240

const $ = (selector) => document.querySelector(selector)
const encodePath = (path) => path.split("/").map(encodeURIComponent).join("/")
const thumbnailURL = (kind, asset, scale, extra = "") =>
  `/v1/thumbnails/${encodeURIComponent(kind)}/${encodePath(asset)}?scale=${scale}${extra}`
const setReady = (view) => { document.body.dataset.ready = view }

/**
 * Why `path` names no asset (null when it may): the daemon's rule (no empty, "." or ".." segment,
 * nothing hidden), checked before a URL is made of it. encodeURIComponent leaves "." alone and a
 * browser resolves "." and ".." segments (and "%2E%2E") in a URL's path, so "#/asset/..%2F..%2F…"
 * would send the operator's credentials to another route.
 */
function assetPathProblem(path) {
  if (typeof path !== "string" || path === "") return "it is empty"
  for (const segment of path.split("/")) {
    if (segment === "") return "it has an empty segment"
    if (segment.startsWith(".")) return `'${segment}' starts with '.' (hidden names, '.' and '..' are not assets)`
  }
  return null
}

// ---- the status line and HTTP ----

function showStatus(text, isError = false) {
  const status = $("#status")
  status.textContent = text
  status.classList.toggle("error", isError)
}

/** fetch → {ok, status, body (parsed JSON or null)}; a network failure is status 0. */
async function request(url, init = {}) {
  try {
    const response = await fetch(url, init)
    const text = response.status === 204 ? "" : await response.text()
    let body = null
    try { body = text ? JSON.parse(text) : null } catch { body = { message: text.slice(0, 200) } }
    return { ok: response.ok, status: response.status, body }
  } catch (error) {
    return { ok: false, status: 0, body: { error: "network", message: String(error?.message ?? error) } }
  }
}

/** Shows a failed answer in #status: "403 forbidden: message (what)". */
function report(result, what) {
  showStatus(`${result.status || "network"} ${result.body?.error ?? "error"}: ${result.body?.message ?? ""} (${what})`, true)
}

let kindsPromise = null
/** GET /v1/kinds, once per page (a failure is retried on the next call). */
function loadKinds() {
  kindsPromise ??= request("/v1/kinds").then((result) => {
    if (result.ok) return result.body?.kinds ?? []
    report(result, "GET /v1/kinds")
    kindsPromise = null
    return []
  })
  return kindsPromise
}

/** Display size of a kind (CSS px): its points, shrunk to fit `maxPx`. */
function displaySize(kind, maxPx) {
  const factor = Math.min(1, maxPx / Math.max(kind.widthPoints, kind.heightPoints))
  return { width: Math.round(kind.widthPoints * factor), height: Math.round(kind.heightPoints * factor), factor }
}

// ---- grid: a virtualized list of every asset, paged from GET /v1/assets ----

const grid = {
  cells: null, // ThumbdCells with the scroller as root
  kind: null, // the kind object shown
  prefix: "",
  assets: [], // paths loaded so far, in the daemon's (byte) order
  next: "", // cursor of the next page; null: all loaded
  loading: false,
  generation: 0, // bumped by a new listing (prefix): older pages are dropped
  live: new Map(), // asset index → cell element in the DOM
  frame: 0,
  firstScreen: null, // assets of the first screen not painted yet (for data-ready="grid")
  visible: false,
}

function gridLayout() {
  const scroller = $("#grid-scroll")
  const { width, height } = displaySize(grid.kind, GRID_CELL_MAX_PX)
  const columns = Math.max(1, Math.floor((scroller.clientWidth - GRID_GAP_PX) / (width + GRID_GAP_PX)))
  return { scroller, width, height, columns, rowPx: height + GRID_CAPTION_PX + GRID_GAP_PX }
}

function makeCell() {
  const cell = document.createElement("div")
  cell.className = "cell"
  const img = Object.assign(document.createElement("img"), { className: "thumbd-img", alt: "" })
  cell.append(img, Object.assign(document.createElement("span"), { className: "caption" }))
  return cell
}

/** Puts cell elements on the rows in view plus one screen above and below; recycles the rest. */
function renderGrid() {
  grid.frame = 0
  if (!grid.visible || !grid.kind) return
  const { scroller, width, height, columns, rowPx } = gridLayout()
  const rows = Math.ceil(grid.assets.length / columns)
  $("#grid-sizer").style.height = `${rows * rowPx}px`
  const screenRows = Math.ceil(scroller.clientHeight / rowPx) || 1
  const firstRow = Math.max(0, Math.floor(scroller.scrollTop / rowPx) - screenRows)
  const endRow = Math.min(rows, Math.ceil((scroller.scrollTop + scroller.clientHeight) / rowPx) + screenRows)
  const start = firstRow * columns, end = Math.min(grid.assets.length, endRow * columns)
  const free = []
  for (const [index, cell] of grid.live) {
    if (index < start || index >= end) { grid.live.delete(index); free.push(cell) }
  }
  for (let index = start; index < end; index++) {
    const asset = grid.assets[index]
    let cell = grid.live.get(index)
    if (!cell) { cell = free.pop() ?? makeCell(); grid.live.set(index, cell) }
    Object.assign(cell.style, { left: `${GRID_GAP_PX + (index % columns) * (width + GRID_GAP_PX)}px`,
      top: `${Math.floor(index / columns) * rowPx}px`, width: `${width}px`, height: `${height + GRID_CAPTION_PX}px` })
    cell.querySelector("img").style.height = `${height}px`
    cell.classList.toggle("fit", grid.kind.mode === "fit")
    if (!cell.isConnected) $("#grid-sizer").append(cell)
    // Bound only when its model changes: a cell whose thumbnail failed is not asked again each frame.
    if (cell.dataset.asset !== asset || cell.dataset.kind !== grid.kind.name) {
      Object.assign(cell.dataset, { asset, kind: grid.kind.name })
      const caption = cell.querySelector(".caption")
      caption.textContent = asset.slice(asset.lastIndexOf("/") + 1)
      caption.title = asset
      grid.cells.bind(cell, asset, { kind: grid.kind.name })
    }
  }
  for (const cell of free) { grid.cells.unbind(cell); cell.remove() }
  if (!grid.firstScreen && (grid.assets.length > 0 || grid.next === null)) {
    // The first screen: what is visible now; data-ready="grid" once each is painted (or failed).
    const visibleEnd = Math.min(grid.assets.length, Math.ceil((scroller.scrollTop + scroller.clientHeight) / rowPx) * columns)
    grid.firstScreen = new Set(grid.assets.slice(Math.floor(scroller.scrollTop / rowPx) * columns, visibleEnd))
    firstScreenPainted(null)
  }
  const nearEnd = end >= grid.assets.length - columns * screenRows * 2
  if (nearEnd && grid.next !== null) loadAssetPage()
}

function firstScreenPainted(asset) {
  if (!grid.firstScreen) return
  grid.firstScreen.delete(asset)
  if (grid.firstScreen.size === 0 && grid.visible) setReady("grid")
}

const scheduleGrid = () => { grid.frame ||= requestAnimationFrame(renderGrid) }

async function loadAssetPage() {
  if (grid.loading || grid.next === null) return
  grid.loading = true
  const generation = grid.generation
  const query = new URLSearchParams({ limit: String(ASSET_PAGE_LIMIT) })
  if (grid.prefix) query.set("prefix", grid.prefix)
  if (grid.next) query.set("after", grid.next)
  const result = await request(`/v1/assets?${query}`)
  if (generation !== grid.generation) return
  grid.loading = false
  if (!result.ok) { report(result, "GET /v1/assets"); grid.next = null; scheduleGrid(); return }
  for (const { path, placeholder } of result.body.assets ?? []) {
    grid.assets.push(path)
    if (placeholder) grid.cells.rememberPlaceholder(path, placeholder) // spares the POST /v1/placeholders
  }
  grid.next = result.body.next ?? null
  $("#grid-count").textContent = `${grid.assets.length}${grid.next === null ? "" : "+"} assets`
  scheduleGrid()
}

/** A new listing (first show, another prefix): the cells go, paging starts again. */
function resetGrid() {
  grid.generation++
  Object.assign(grid, { assets: [], next: "", loading: false, firstScreen: null })
  for (const cell of grid.live.values()) { grid.cells.unbind(cell); cell.remove() }
  grid.live.clear()
  $("#grid-scroll").scrollTop = 0
  loadAssetPage()
}

async function showGrid() {
  grid.visible = true
  const kinds = await loadKinds()
  if (!grid.visible) return
  if (!grid.cells) {
    grid.cells = new ThumbdCells({ root: $("#grid-scroll") })
    const select = $("#kind-select")
    select.replaceChildren(...kinds.map((kind) => new Option(`${kind.name} (${kind.widthPoints}×${kind.heightPoints} ${kind.mode})`, kind.name)))
    grid.kind = kinds.find((kind) => kind.mode === "fill") ?? kinds[0] ?? null
    if (grid.kind) select.value = grid.kind.name
    select.addEventListener("change", () => { grid.kind = kinds.find((kind) => kind.name === select.value); scheduleGrid() })
    let debounce = 0
    $("#prefix").addEventListener("input", (event) => {
      clearTimeout(debounce)
      debounce = setTimeout(() => { grid.prefix = event.target.value; resetGrid() }, 250)
    })
    const scroller = $("#grid-scroll")
    scroller.addEventListener("scroll", scheduleGrid, { passive: true })
    new ResizeObserver(scheduleGrid).observe(scroller)
    scroller.addEventListener("thumbd:paint", (event) => { if (event.detail.state === "thumbnail") firstScreenPainted(event.detail.asset) })
    scroller.addEventListener("thumbd:error", (event) => firstScreenPainted(event.detail.asset))
    scroller.addEventListener("click", (event) => {
      const cell = event.target.closest(".cell")
      if (cell) location.hash = "#/asset/" + encodeURIComponent(cell.dataset.asset)
    })
    if (!grid.kind) { showStatus("no kinds configured", true); setReady("grid"); return }
    resetGrid()
  } else {
    grid.firstScreen = null // back from another view: ready again once this screen is painted
    scheduleGrid()
  }
}

function hideGrid() {
  grid.visible = false
  // The cells go (their slots released), the listing stays for the way back.
  for (const cell of grid.live.values()) { grid.cells?.unbind(cell); cell.remove() }
  grid.live.clear()
}

// ---- asset page: the source, every kind's crop on it, the focus point ----

const asset = { path: null, generation: 0, source: null, kinds: [], focus: null }

const jsonInit = { headers: { Accept: "application/json" }, cache: "no-store" } // ETags change with the focus
const focusURL = (path) => `/v1/assets/${encodePath(path)}/focus`

function svgElement(tag, attributes) {
  const node = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value))
  return node
}

/** The overlay in source pixels: each kind's crop rectangle (its colour, its name), then the focus. */
function drawOverlay() {
  const overlay = $("#overlay")
  overlay.replaceChildren()
  const size = asset.source // {width, height} of the upright source, from the fit's crop
  if (!size) return
  overlay.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`)
  const fontPx = Math.max(size.width, size.height) / 45
  asset.kinds.forEach((entry, index) => {
    const crop = entry.info?.crop
    if (!crop) return
    const group = svgElement("g", { class: "crop", "data-kind": entry.kind.name })
    group.append(svgElement("rect", { x: crop.x, y: crop.y, width: crop.width, height: crop.height, fill: "none",
      stroke: entry.color, "stroke-width": 2, "vector-effect": "non-scaling-stroke" }))
    // Labels stacked by kind: crops often share a corner.
    const label = svgElement("text", { x: crop.x + fontPx * 0.3, y: crop.y + fontPx * 1.2 * (index + 1), fill: entry.color, "font-size": fontPx })
    label.textContent = entry.kind.name
    group.append(label)
    overlay.append(group)
  })
  const focus = asset.focus
  if (focus) {
    const radius = Math.max(size.width, size.height) / 90
    if (focus.width > 0 && focus.height > 0) {
      overlay.append(svgElement("rect", { x: focus.x * size.width, y: focus.y * size.height, width: focus.width * size.width,
        height: focus.height * size.height, fill: "none", stroke: "#fff", "stroke-dasharray": "4 3", "vector-effect": "non-scaling-stroke" }))
    }
    const cx = (focus.x + (focus.width ?? 0) / 2) * size.width, cy = (focus.y + (focus.height ?? 0) / 2) * size.height
    overlay.append(svgElement("circle", { id: "focus-dot", cx, cy, r: radius, fill: "#ff2d55", stroke: "#fff",
      "stroke-width": 2, "vector-effect": "non-scaling-stroke" }))
  }
}

/** The figure of one kind: the thumbnail at its display size, with the mask as a client shows it. */
function kindFigure(kind, color) {
  const figure = document.createElement("figure")
  figure.className = "kind"
  figure.dataset.kind = kind.name
  figure.style.borderColor = color
  figure.append(Object.assign(document.createElement("img"), { alt: kind.name }), document.createElement("figcaption"))
  return figure
}

function kindCaption(entry, error) {
  const { kind, info } = entry
  const crop = info?.crop
  const lines = [`${kind.name} · ${kind.mode} · crop ${kind.crop ?? "–"} · mask ${kind.mask ?? "none"}`,
    error ? `error: ${error}` : crop ? `rect ${crop.x},${crop.y} ${crop.width}×${crop.height} px` : "rect –",
    info ? `${info.width}×${info.height} ${info.format}, ${info.bytes} bytes` : ""]
  entry.figure.querySelector("figcaption").replaceChildren(...lines.filter(Boolean).map((line) => {
    const row = document.createElement("div")
    row.textContent = line
    return row
  }))
}

/** A kind's JSON answer (crop) and thumbnail, always from the daemon (a focus change re-crops). */
async function loadKind(entry, generation) {
  const { kind } = entry
  const scale = kind.pixels?.some((p) => p.scale === KIND_SCALE) ? KIND_SCALE : (kind.pixels?.at(-1)?.scale ?? KIND_SCALE)
  const result = await request(thumbnailURL(kind.name, asset.path, scale, `&wait=${JSON_WAIT_MS}`), jsonInit)
  if (generation !== asset.generation) return
  if (!result.ok) {
    entry.info = null
    kindCaption(entry, `${result.status} ${result.body?.error ?? ""}`)
    report(result, `kind ${kind.name}`)
    return
  }
  entry.info = result.body
  entry.figure.dataset.crop = JSON.stringify(entry.info.crop ?? null) // for tests: the rectangle drawn
  const response = await fetch(thumbnailURL(kind.name, asset.path, scale), { cache: "no-store" }).catch(() => null)
  if (generation !== asset.generation) return
  const img = entry.figure.querySelector("img")
  if (response?.ok) {
    const blob = await response.blob()
    if (generation !== asset.generation) return // another asset meanwhile: this figure is gone
    const previous = img.src
    img.src = URL.createObjectURL(blob)
    await img.decode().catch(() => {})
    if (previous.startsWith("blob:")) URL.revokeObjectURL(previous)
  } else {
    report({ status: response?.status ?? 0, body: await response?.json().catch(() => null) }, `thumbnail of ${kind.name}`)
  }
  // Shown at points (shrunk to fit the figure), the mask as CSS: "circle" → 50 %, "radius N" → N pt.
  const { factor } = displaySize(kind, KIND_FIGURE_MAX_PX)
  img.style.width = `${Math.round((entry.info.width / scale) * factor)}px`
  img.style.height = `${Math.round((entry.info.height / scale) * factor)}px`
  const radius = /^radius\s+(\d+(?:\.\d+)?)/.exec(kind.mask ?? "")
  img.style.borderRadius = kind.mask === "circle" ? "50%" : radius ? `${Number(radius[1]) * factor}px` : ""
  kindCaption(entry)
}

async function showPlaceholder(path, known, generation) {
  let placeholder = known
  if (!placeholder) {
    const result = await request("/v1/placeholders", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assets: [path] }) })
    if (!result.ok) return report(result, "POST /v1/placeholders")
    placeholder = result.body?.placeholders?.[path]
  }
  if (generation !== asset.generation) return
  const img = $("#placeholder")
  if (placeholder?.thumbhash) img.src = thumbHashToDataURL(base64ToBytes(placeholder.thumbhash))
  img.title = placeholder?.thumbhash ? `ThumbHash ${placeholder.thumbhash}, average ${placeholder.averageColor}`
    : `no placeholder (${placeholder?.status ?? "unknown"})`
  $("#placeholder-caption").textContent = placeholder?.thumbhash ? `placeholder · ${placeholder.averageColor}` : img.title
}

async function showAsset(path) {
  const generation = ++asset.generation
  const problem = assetPathProblem(path)
  Object.assign(asset, { path: problem ? null : path, source: null, kinds: [], focus: null })
  $("#asset-title").textContent = path
  $("#nav-asset").href = "#/asset/" + encodeURIComponent(path)
  $("#source-img").removeAttribute("src")
  $("#placeholder").removeAttribute("src")
  $("#overlay").replaceChildren()
  // The figures go: their thumbnails' blobs with them.
  for (const img of $("#kinds").querySelectorAll("img")) if (img.src.startsWith("blob:")) URL.revokeObjectURL(img.src)
  $("#kinds").replaceChildren()
  if (problem) {
    showStatus(`not an asset path: ${problem}`, true)
    setReady("asset")
    return
  }
  const [kinds, source, focus] = await Promise.all([loadKinds(),
    request(thumbnailURL(SOURCE_SPEC, path, 1, `&wait=${JSON_WAIT_MS}`), jsonInit), request(focusURL(path))])
  if (generation !== asset.generation) return
  if (source.ok) {
    const crop = source.body.crop // a fit shows the whole source: its crop is the source's size
    asset.source = crop ? { width: crop.width, height: crop.height } : null
    if (!crop) showStatus("the source's size is unknown (no crop recorded): rectangles are not drawn", true)
    const img = $("#source-img")
    img.src = thumbnailURL(SOURCE_SPEC, path, 1)
    await img.decode().catch(() => showStatus("the source image could not be shown", true))
  } else {
    report(source, `source ${SOURCE_SPEC}`)
  }
  if (focus.ok) asset.focus = focus.body.focus
  else if (focus.status !== 404) report(focus, "GET focus") // 404 noFocus: none set
  asset.kinds = kinds.map((kind, index) => ({ kind, color: COLORS[index % COLORS.length], info: null, figure: kindFigure(kind, COLORS[index % COLORS.length]) }))
  $("#kinds").replaceChildren(...asset.kinds.map((entry) => entry.figure))
  await Promise.all([showPlaceholder(path, source.ok ? source.body.placeholder : null, generation),
    ...asset.kinds.map((entry) => loadKind(entry, generation))])
  if (generation !== asset.generation) return
  drawOverlay()
  setReady("asset")
}

/** A click on the source sets the focus there; then every kind is fetched again (focus crops follow). */
async function setFocus(event) {
  if (!asset.path || !asset.source) return
  const box = event.currentTarget.getBoundingClientRect()
  const clamp = (value) => Math.min(1, Math.max(0, Math.round(value * 10000) / 10000))
  const point = { x: clamp((event.clientX - box.left) / box.width), y: clamp((event.clientY - box.top) / box.height) }
  const generation = asset.generation
  delete document.body.dataset.ready
  const result = await request(focusURL(asset.path), { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify(point) })
  if (generation !== asset.generation) return
  if (!result.ok) { report(result, "PUT focus"); setReady("asset"); return }
  asset.focus = result.body.focus
  showStatus(`focus set at ${point.x}, ${point.y}`)
  drawOverlay()
  await Promise.all(asset.kinds.map((entry) => loadKind(entry, generation)))
  if (generation !== asset.generation) return
  drawOverlay()
  setReady("asset")
}

// ---- charts ----

let stopCharts = null

// ---- routing ----

const views = {
  grid: { show: showGrid, hide: hideGrid },
  asset: { show: showAsset, hide: () => { asset.generation++ } },
  charts: {
    show: () => {
      stopCharts = startCharts($("#charts"), { onSamples: (count) => { if (count >= 2) setReady("charts") },
        onError: (text) => showStatus(text, true) })
    },
    hide: () => { stopCharts?.(); stopCharts = null },
  },
}
let currentView = null

function route() {
  const hash = location.hash || "#/"
  let name = "grid", argument = null
  if (hash.startsWith("#/asset/")) {
    name = "asset"
    try { argument = decodeURIComponent(hash.slice("#/asset/".length)) } catch { argument = hash.slice("#/asset/".length) }
  } else if (hash === "#/charts") {
    name = "charts"
  }
  delete document.body.dataset.ready
  showStatus("")
  currentView?.hide()
  currentView = views[name]
  for (const view of Object.keys(views)) $(`#${view}-view`).hidden = view !== name
  for (const link of document.querySelectorAll("nav a[data-view]")) link.toggleAttribute("aria-current", link.dataset.view === name)
  currentView.show(argument)
}

$("#source-img").addEventListener("click", setFocus)
window.addEventListener("hashchange", route)
route()
