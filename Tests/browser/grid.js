// The browser test's page (Tests/browser/cells_browser.py): a virtualized 4-column grid of every
// model in models.json (asset + the URL its back end signed), in one of three modes (?mode=):
//   cells     thumbd-cells.js: slots, tokens, aborts, placeholders first, prefetch;
//   nocancel  the same library with cancellation off (no aborts, no slots): the control run;
//   naive     plain <img src> per cell, nothing else: what a page without the library does.
// A MutationObserver logs every paint and checks it against the cell's model at that moment.
const params = new URLSearchParams(location.search)
const mode = params.get("mode") ?? "cells"
const COLUMNS = 4
const scroller = document.getElementById("scroller")
const content = document.getElementById("content")
const models = await (await fetch("models.json")).json()
const signed = new Map(models.map((model) => [model.asset, model.url]))

let cells = null
if (mode !== "naive") {
  const { ThumbdCells } = await import("/v1/thumbd-cells.js")
  cells = new ThumbdCells({ kind: params.get("kind") ?? "grid", root: scroller, cancel: mode === "cells",
    sign: async (requests) => requests.map((request) => signed.get(request.asset)) })
  await cells.ready
}

// --- the paint log: records in order, each attribute's new value rebuilt from the next record ---
const log = { stale: [], paints: 0, bindings: new Map() } // cell id → [{model, placeholderAt, thumbnailAt}]
const shadowModel = new Map(), shadowImg = new Map()
function newValues(records) {
  // A record has the old value only: a change's new value is the next record's old value for the
  // same node and attribute, or the attribute's value now for the last one.
  const next = new Map(), values = new Array(records.length)
  for (let i = records.length - 1; i >= 0; i--) {
    const { target, attributeName } = records[i], key = target
    let byAttribute = next.get(key)
    if (!byAttribute) next.set(key, byAttribute = new Map())
    values[i] = byAttribute.has(attributeName) ? byAttribute.get(attributeName) : target.getAttribute(attributeName)
    byAttribute.set(attributeName, records[i].oldValue)
  }
  return values
}
new MutationObserver((records) => {
  const values = newValues(records), now = performance.now()
  records.forEach((record, i) => {
    const node = record.target, value = values[i]
    if (node.classList.contains("cell")) {
      if (record.attributeName !== "data-model") return
      shadowModel.set(node.id, value)
      const list = log.bindings.get(node.id) ?? []
      list.push({ model: value, boundAt: now, placeholderAt: null, thumbnailAt: null })
      if (list.length > 4) list.shift()
      log.bindings.set(node.id, list)
      return
    }
    const img = shadowImg.get(node) ?? {}
    shadowImg.set(node, img)
    if (record.attributeName === "data-asset") img.asset = value
    else if (record.attributeName === "data-state") img.state = value
    else if (record.attributeName === "src" && value) {
      const cell = node.parentElement
      const model = shadowModel.get(cell.id)
      log.paints++
      if (img.asset !== model) log.stale.push({ cell: cell.id, painted: img.asset, model, state: img.state })
      const binding = (log.bindings.get(cell.id) ?? []).at(-1)
      if (binding && binding.model === model) {
        if (img.state === "placeholder") binding.placeholderAt ??= now
        if (img.state === "thumbnail") binding.thumbnailAt ??= now
      }
    }
  })
}).observe(content, { subtree: true, attributes: true, attributeOldValue: true,
  attributeFilter: ["src", "data-asset", "data-state", "data-model"] })

// --- the virtualizer: rows in view plus one screen above and below, cells recycled ---
let side = 0, rows = 0
const pool = new Map() // model index → cell element
const spare = []
let cellCount = 0
const painted = new Set() // assets whose thumbnail reached a cell
content.addEventListener("thumbd:paint", (event) => { if (event.detail.state === "thumbnail") painted.add(event.detail.asset) })

function layout() {
  side = Math.floor(scroller.clientWidth / COLUMNS)
  rows = Math.ceil(models.length / COLUMNS)
  content.style.height = rows * side + "px"
  render()
}
function assign(cell, index) {
  const model = models[index]
  cell.style.transform = `translate(${(index % COLUMNS) * side}px, ${Math.floor(index / COLUMNS) * side}px)`
  cell.dataset.model = model.asset
  if (cells) return cells.bind(cell, model.asset)
  let img = cell.querySelector("img")
  if (!img) {
    cell.append(img = Object.assign(document.createElement("img"), { className: "thumbd-img", alt: "" }))
    img.addEventListener("load", () => { if (img.dataset.asset === cell.dataset.model) painted.add(img.dataset.asset) })
  }
  img.dataset.asset = model.asset
  img.dataset.state = "thumbnail"
  img.src = model.url
}
function render() {
  const screen = scroller.clientHeight
  const first = Math.max(0, Math.floor((scroller.scrollTop - screen) / side)) * COLUMNS
  const last = Math.min(models.length, Math.ceil((scroller.scrollTop + 2 * screen) / side) * COLUMNS)
  for (const [index, cell] of pool) {
    if (index < first || index >= last) { pool.delete(index); spare.push(cell) }
  }
  for (let index = first; index < last; index++) {
    if (pool.has(index)) continue
    let cell = spare.pop()
    if (!cell) {
      cell = Object.assign(document.createElement("div"), { className: "cell", id: "cell-" + cellCount++ })
      cell.style.width = cell.style.height = side + "px"
      content.append(cell)
    }
    pool.set(index, cell)
    assign(cell, index)
  }
  // Cells left over stay in the DOM for reuse, out of sight and unbound from any model.
  for (const cell of spare) { cell.style.transform = "translate(-10000px, 0)"; if (cells) cells.unbind(cell); else cell.querySelector("img")?.removeAttribute("src") }
}
let frame = 0
scroller.addEventListener("scroll", () => { frame ||= requestAnimationFrame(() => { frame = 0; render() }) }, { passive: true })
layout()

function visibleCells() {
  const top = scroller.scrollTop, bottom = top + scroller.clientHeight
  return [...pool].filter(([index]) => {
    const y = Math.floor(index / COLUMNS) * side
    return y + side > top && y < bottom
  }).map(([, cell]) => cell)
}
function isShown(cell) {
  const img = cell.querySelector("img")
  return img && img.dataset.asset === cell.dataset.model && img.dataset.state === "thumbnail" && img.getAttribute("src")
    && img.complete && img.naturalWidth > 0
}

/** Scrolls by `step` px every `tickMs` for `durationMs` (turning at either end), stops, and waits
 *  until every visible cell shows its thumbnail (or `settleLimitMs`): the run's report. */
window.runScroll = async ({ step = 600, tickMs = 16, durationMs = 20000, settleLimitMs = 15000 } = {}) => {
  let direction = 1
  const started = performance.now()
  await new Promise((done) => {
    const timer = setInterval(() => {
      const max = scroller.scrollHeight - scroller.clientHeight
      if ((direction > 0 && scroller.scrollTop >= max) || (direction < 0 && scroller.scrollTop <= 0)) direction = -direction
      scroller.scrollTop += direction * step
      if (performance.now() - started >= durationMs) { clearInterval(timer); done() }
    }, tickMs)
  })
  const stoppedAt = performance.now()
  performance.clearResourceTimings() // its buffer (250 entries) is for what comes after the stop
  let settledAt = null
  while (performance.now() - stoppedAt < settleLimitMs) {
    await new Promise((next) => requestAnimationFrame(next))
    if (visibleCells().every(isShown)) { settledAt = performance.now(); break }
  }
  await new Promise((next) => setTimeout(next, 50)) // the observer's last records
  const visible = visibleCells().map((cell) => {
    const binding = (log.bindings.get(cell.id) ?? []).at(-1) ?? {}
    return { cell: cell.id, model: cell.dataset.model, shown: Boolean(isShown(cell)),
      placeholderFirst: binding.placeholderAt != null && binding.thumbnailAt != null && binding.placeholderAt <= binding.thumbnailAt,
      placeholderAt: binding.placeholderAt, thumbnailAt: binding.thumbnailAt }
  })
  // When the thumbnails asked after the stop went out and came back, relative to the stop.
  const afterStop = performance.getEntriesByType("resource")
    .filter((entry) => entry.name.includes("/v1/thumbnails/") && entry.startTime >= stoppedAt)
  const timeline = afterStop.length ? {
    requests: afterStop.length, firstStartMs: Math.min(...afterStop.map((e) => e.startTime)) - stoppedAt,
    lastEndMs: Math.max(...afterStop.map((e) => e.responseEnd)) - stoppedAt,
    slowestMs: Math.max(...afterStop.map((e) => e.responseEnd - e.startTime)) } : null
  return { mode, scrolledMs: stoppedAt - started, timeline, settleMs: settledAt == null ? null : settledAt - stoppedAt,
    stale: log.stale.length, staleExamples: log.stale.slice(0, 5), paints: log.paints, visible,
    paintedThumbnails: painted.size, cellElements: cellCount, stats: cells ? { ...cells.stats } : null }
}
window.gridReady = true
