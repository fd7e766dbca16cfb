// thumbd-cells.js — the browser half of thumbd's reused cells (UIKit's prepareForReuse, for the web).
// Served by the daemon at GET /v1/thumbd-cells.js; a plain ES module, no dependencies.
//
// A page's virtualizer calls `cells.bind(cell, asset)` each time it (re)uses a cell element for a
// model, and `cells.unbind(cell)` when it removes one. Per bind the library clears the cell, paints
// the asset's placeholder (ThumbHash) as soon as it is known, then the thumbnail. Every bind bumps
// the cell's token; an answer is painted only if the token it was asked under is still the cell's
// (painting a stale image is always a bug). With `cancel` on, thumbnails wait while the list is
// flung (faster than FLING_SCREENS_PER_SECOND: a cell passes in a few frames, its render would be
// wasted; placeholders still paint), as Glide pauses a RecyclerView's requests while it settles;
// and a superseded fetch is aborted
// and the daemon told, through the slot parameters (client, slot, token) and DELETE /v1/slots.
//
// DOM protocol (test harnesses watch it with a MutationObserver; keep it exact):
//   * a bound cell holds one <img class="thumbd-img"> (created and appended when missing);
//   * a bind first clears it: img.dataset.asset = asset, img.dataset.state = "empty", src removed;
//   * every paint sets, in this order: img.dataset.asset = asset, img.dataset.state =
//     "placeholder" | "thumbnail", then img.src (data: URL placeholder, blob: URL thumbnail);
//   * after each paint the cell gets CustomEvent "thumbd:paint" (bubbles), detail {asset, state,
//     token}; for a thumbnail only once the <img> has decoded it (displayable);
//   * a thumbnail that fails for good: CustomEvent "thumbd:error" (bubbles), detail {asset, token,
//     status, error, message} (the daemon's error code and message; status 0: network).

// 1×1 images the browser must decode for its Accept header to name the format (made with Pillow).
const AVIF_1PX = "data:image/avif;base64,AAAAIGZ0eXBhdmlmAAAAAGF2aWZtaWYxbWlhZk1BMUIAAADrbWV0YQAAAAAAAAAhaGRscgAAAAAAAAAAcGljdAAAAAAAAAAAAAAAAAAAAAAOcGl0bQAAAAAAAQAAAB5pbG9jAAAAAEQAAAEAAQAAAAEAAAETAAAAKAAAAChpaW5mAAAAAAABAAAAGmluZmUCAAAAAAEAAGF2MDFDb2xvcgAAAABqaXBycAAAAEtpcGNvAAAAFGlzcGUAAAAAAAAAAQAAAAEAAAAQcGl4aQAAAAADCAgIAAAADGF2MUOBAAwAAAAAE2NvbHJuY2x4AAEADQAGgAAAABdpcG1hAAAAAAAAAAEAAQQBAoMEAAAAMG1kYXQSAAoIGAAGiAhoNCAyGhlHh4Yhh5555oAAAJBAyRxhSytNj1FFTqSg"
const WEBP_1PX = "data:image/webp;base64,UklGRjgAAABXRUJQVlA4ICwAAACQAQCdASoBAAEAAsBMJaACdLoAA5gA/u5DH+5sc4twV/9tD/9aH/60P+lAAA=="

const PLACEHOLDER_CACHE_ENTRIES = 2000 // each decoded one is a ~2 KB data URL, made lazily
const SIGNED_URL_CACHE_ENTRIES = 5000
const PLACEHOLDER_BATCH_ASSETS = 200 // the daemon's cap per POST /v1/placeholders
const PENDING_PLACEHOLDER_RETRY_MS = 150 // "pending": a render was queued for it; ask once more
const PLACEHOLDER_WAIT_CAP_MS = 300 // a thumbnail that outran its placeholder's answer waits this long at most
const RETRY_AFTER_CAP_MS = 1000
// A scroll faster than this many screens a second is a fling: no thumbnail starts until it slows
// down or stops for FLING_SETTLE_MS. A reading scroll is well under one screen a second.
const FLING_SCREENS_PER_SECOND = 4
const FLING_SETTLE_MS = 50 // three 60 Hz frames without a scroll: the list stopped (two can be one janky frame)
const SIGNED_URL_MARGIN_SECONDS = 5 // a cached signed URL this close to its `expires` is signed again
const KEEPALIVE_RELEASES_IN_FLIGHT = 64 // Chrome fails keepalive fetches past its quota (ERR_INSUFFICIENT_RESOURCES)

/** Insert into a Map used as a bounded cache: past `capEntries` the oldest entry goes. */
function remember(map, key, value, capEntries) {
  map.delete(key)
  map.set(key, value)
  if (map.size > capEntries) map.delete(map.keys().next().value)
}
const nextFrame = (callback) => (globalThis.requestAnimationFrame ?? ((f) => setTimeout(f, 16)))(callback)
const joinQuery = (url, params) => url + (url.includes("?") ? "&" : "?") + params
/** Resolves when `promise` settles or after `ms`, whichever comes first (leaving no timer behind). */
const within = (promise, ms) => new Promise((done) => {
  const timer = setTimeout(done, ms)
  promise.finally(() => { clearTimeout(timer); done() })
})

/** Base64 (as the daemon sends ThumbHashes) to bytes. */
export function base64ToBytes(text) {
  const binary = atob(text)
  return Uint8Array.from(binary, (char) => char.charCodeAt(0))
}

/**
 * Decodes a ThumbHash (https://evanw.github.io/thumbhash/) to at most 32×32 RGBA pixels.
 * Bytes: a 24-bit and a 16-bit little-endian header (DC terms of the L, P, Q channels, their AC
 * scales, the alpha flag, the orientation, the coefficient count of the shorter side), an alpha
 * byte when there is alpha, then 4-bit AC coefficients, low nibble first, channel after channel.
 * Each channel is a sum of cosines (a DCT); LPQ (+A) becomes RGBA at the end.
 */
export function thumbHashToRGBA(bytes) {
  if (bytes.length < 5) throw new RangeError("a ThumbHash has at least 5 bytes")
  const header24 = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16), header16 = bytes[3] | (bytes[4] << 8)
  const hasAlpha = (header24 >> 23) & 1, isLandscape = header16 >> 15
  const lDC = (header24 & 63) / 63, pDC = ((header24 >> 6) & 63) / 31.5 - 1, qDC = ((header24 >> 12) & 63) / 31.5 - 1
  const lScale = ((header24 >> 18) & 31) / 31, pScale = ((header16 >> 3) & 63) / 63, qScale = ((header16 >> 9) & 63) / 63
  const aDC = hasAlpha ? (bytes[5] & 15) / 15 : 1, aScale = (bytes[5] >> 4) / 15
  // L's coefficient counts: the longer side has 7 (5 with alpha), the shorter side's is stored.
  const longSide = hasAlpha ? 5 : 7, shortSide = header16 & 7
  const lx = Math.max(3, isLandscape ? longSide : shortSide), ly = Math.max(3, isLandscape ? shortSide : longSide)
  // An nx×ny channel keeps the triangle cx/nx + cy/ny < 1 without the DC term, row by row.
  let nibble = 0
  const readAC = (nx, ny, scale, ac = []) => {
    for (let cy = 0; cy < ny; cy++) {
      for (let cx = cy ? 0 : 1; cx * ny < nx * (ny - cy); cx++, nibble++) {
        ac.push((((bytes[(hasAlpha ? 6 : 5) + (nibble >> 1)] >> ((nibble & 1) << 2)) & 15) / 7.5 - 1) * scale)
      }
    }
    return ac
  }
  const lAC = readAC(lx, ly, lScale), pAC = readAC(3, 3, pScale * 1.25), qAC = readAC(3, 3, qScale * 1.25)
  const aAC = hasAlpha ? readAC(5, 5, aScale) : []
  // 32 px on the longer side; the aspect ratio from the unclamped counts, as the encoder stored it.
  const ratio = (isLandscape ? longSide : shortSide) / (isLandscape ? shortSide : longSide)
  const w = Math.max(1, Math.round(ratio > 1 ? 32 : 32 * ratio)), h = Math.max(1, Math.round(ratio > 1 ? 32 / ratio : 32))
  const rgba = new Uint8ClampedArray(w * h * 4)
  const fx = new Float64Array(Math.max(lx, hasAlpha ? 5 : 3)), fy = new Float64Array(Math.max(ly, hasAlpha ? 5 : 3))
  for (let y = 0, i = 0; y < h; y++) {
    for (let cy = 0; cy < fy.length; cy++) fy[cy] = Math.cos((Math.PI / h) * (y + 0.5) * cy)
    for (let x = 0; x < w; x++, i += 4) {
      for (let cx = 0; cx < fx.length; cx++) fx[cx] = Math.cos((Math.PI / w) * (x + 0.5) * cx)
      // The published summation order (×2 last is exact), so the floats and pixels agree exactly.
      let l = lDC, p = pDC, q = qDC, a = aDC
      for (let cy = 0, j = 0; cy < ly; cy++) {
        for (let cx = cy ? 0 : 1; cx * ly < lx * (ly - cy); cx++, j++) l += lAC[j] * fx[cx] * fy[cy] * 2
      }
      for (let cy = 0, j = 0; cy < 3; cy++) {
        for (let cx = cy ? 0 : 1; cx < 3 - cy; cx++, j++) { const f = fx[cx] * fy[cy] * 2; p += pAC[j] * f; q += qAC[j] * f }
      }
      for (let cy = 0, j = 0; cy < 5 && hasAlpha; cy++) {
        for (let cx = cy ? 0 : 1; cx < 5 - cy; cx++, j++) a += aAC[j] * fx[cx] * fy[cy] * 2
      }
      const b = l - (2 / 3) * p, r = (3 * l - b + q) / 2
      rgba.set([255 * r, 255 * (r - q), 255 * b, 255 * a], i) // clamped to 0…255, rounded to nearest
    }
  }
  return { w, h, rgba }
}

let scratchCanvas = null
/** A ThumbHash as a PNG data URL (browser only: drawn on a canvas). */
export function thumbHashToDataURL(bytes) {
  const { w, h, rgba } = thumbHashToRGBA(bytes)
  scratchCanvas ??= document.createElement("canvas")
  Object.assign(scratchCanvas, { width: w, height: h })
  scratchCanvas.getContext("2d").putImageData(new ImageData(rgba, w, h), 0, 0)
  return scratchCanvas.toDataURL("image/png")
}

/** A 1×1 SVG of "#rrggbb[aa]": the placeholder of an asset known only by its average colour. */
function colorDataURL(hex) {
  const opacity = hex.length === 9 ? (parseInt(hex.slice(7), 16) / 255).toFixed(3) : "1"
  return "data:image/svg+xml," + encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1">`
    + `<rect width="1" height="1" fill="${hex.slice(0, 7)}" fill-opacity="${opacity}"/></svg>`)
}

async function decodes(dataURL) {
  if (typeof Image === "undefined") return false
  const img = new Image()
  img.src = dataURL
  try { await img.decode(); return img.naturalWidth > 0 } catch { return false }
}

/** The Accept header of thumbnail fetches: only the formats this browser really decodes. */
async function detectAccept() {
  const [avif, webp] = await Promise.all([decodes(AVIF_1PX), decodes(WEBP_1PX)])
  return [avif && "image/avif", webp && "image/webp", "image/*;q=0.8"].filter(Boolean).join(",")
}

/**
 * A non-2xx answer, and how soon it is worth asking again (delayMs, null: not). 409 `superseded`:
 * a newer request owns the slot. 409 `cancelled` of the current request: a DELETE of ours that
 * this later request overtook (keepalive fetches race): at once. 429/503: after Retry-After, capped.
 */
async function failure(response) {
  const { status } = response
  const body = await response.json().catch(() => ({}))
  const seconds = Number(response.headers.get("Retry-After") ?? NaN)
  const delayMs = status === 409 ? (body.error === "cancelled" ? 0 : null)
    : status === 429 || status === 503 ? Math.min(RETRY_AFTER_CAP_MS, seconds >= 0 ? seconds * 1000 : RETRY_AFTER_CAP_MS) : null
  return { status, error: body.error ?? null, message: body.message ?? response.statusText, delayMs }
}

function randomClientID() {
  const crypto = globalThis.crypto
  if (crypto?.randomUUID) return crypto.randomUUID() // secure contexts only (https, localhost)
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("")
}

export class ThumbdCells {
  stats = { requestsStarted: 0, requestsAborted: 0, thumbnailsPainted: 0, placeholdersPainted: 0, stalePaintsPrevented: 0,
    bytesReceived: 0, placeholderRequests: 0, prefetchesWithdrawn: 0, placeholdersLate: 0, requestsFailed: 0 }
  #states = new WeakMap() // cell element → its record; the slot id lives as long as the element
  #bound = new Set() // cells bound now: no more than the page keeps in its DOM
  #queued = new Set() // cells bound since the last animation frame
  #frame = 0
  #knownPlaceholders = new Map() // asset → {thumbhash, averageColor, source: data URL made on first paint}
  #placeholderAnswers = new Map() // asset → promise of its POST /v1/placeholders in flight (settles when handled)
  #signedURLs = new Map() // kind \0 asset \0 scale → {url, expiresSeconds}
  #toSign = []
  #slotCount = 0
  #keepalivesInFlight = 0
  #observer = null
  #scrollTarget = null // the root, or the window
  #scrollTop = 0
  #direction = 1 // +1 down (also before any scroll), −1 up
  #scrollFrame = 0
  #scrolledAt = 0 // performance.now() of the last scroll frame
  #flinging = false
  #flingTimer = 0
  #visibleLoads = 0 // visible-priority loads under way; prefetches start when none is
  #onScroll = () => { this.#scrollFrame ||= nextFrame(() => this.#scrolled()) }

  constructor(options = {}) {
    this.base = options.base ?? ""
    this.kind = options.kind
    this.scale = options.scale ?? Math.min(4, Math.max(1, Math.ceil(globalThis.devicePixelRatio || 1)))
    this.client = options.client ?? randomClientID() // per page: pages behind one proxy never share a slot
    this.sign = options.sign ?? null
    this.cancel = options.cancel ?? true
    this.placeholders = options.placeholders ?? true
    this.root = options.root ?? null
    this.prefetch = options.prefetch ?? true
    this.accept = options.accept ?? "image/*"
    this.ready = options.accept ? Promise.resolve() : detectAccept().then((accept) => { this.accept = accept })
    if (typeof IntersectionObserver !== "undefined") {
      // One screen above and below the root: which bound cells are near enough to be worth a fetch.
      this.#observer = new IntersectionObserver((entries) => this.#nearChanged(entries),
        { root: this.root, rootMargin: "100% 0px 100% 0px" })
    }
    this.#scrollTarget = this.root ?? (typeof window === "undefined" ? null : window)
    this.#scrollTarget?.addEventListener("scroll", this.#onScroll, { passive: true })
    this.#scrollTop = this.#currentScrollTop()
  }

  /** The cell element now shows `asset` (of `kind`, default the constructor's). */
  bind(cell, asset, { kind } = {}) {
    kind ??= this.kind
    const st = this.#state(cell)
    // The same model bound again: what is painted or on its way stays (after a failure: asked again).
    if (st.asset === asset && st.kind === kind && !st.failed) return
    this.#stop(st)
    Object.assign(st, { token: st.token + 1, asset, kind, shown: "empty", failed: false })
    this.#clear(st, asset)
    if (!this.#bound.has(cell)) { this.#bound.add(cell); this.#observer?.observe(cell) }
    const known = this.#placeholderSource(asset)
    if (known) this.#paint(cell, st, asset, "placeholder", known) // a re-shown asset: at once, no round trip
    this.#queued.add(cell)
    this.#frame ||= nextFrame(() => this.#flush())
  }

  /** The cell left the page: its fetch stops and (cancel on) its slot is released at the daemon. */
  unbind(cell) {
    const st = this.#states.get(cell)
    if (!st || !this.#bound.delete(cell)) return
    this.#queued.delete(cell)
    this.#observer?.unobserve(cell)
    this.#stop(st)
    Object.assign(st, { token: st.token + 1, asset: null, shown: "empty" })
    if (this.cancel && st.slotUsed) this.#releaseSlot(st)
    this.#clear(st, null)
  }

  /** Seeds the placeholder cache (e.g. from GET /v1/assets): binds of `asset` then paint it at once. */
  rememberPlaceholder(asset, { thumbhash, averageColor } = {}) {
    if (thumbhash || averageColor) remember(this.#knownPlaceholders, asset, { thumbhash, averageColor }, PLACEHOLDER_CACHE_ENTRIES)
  }

  /** Unbinds every cell and stops listening (the page leaves this view). */
  disconnect() {
    clearTimeout(this.#flingTimer)
    for (const cell of [...this.#bound]) this.unbind(cell)
    this.#observer?.disconnect()
    this.#scrollTarget?.removeEventListener("scroll", this.#onScroll)
  }

  #state(cell) {
    let st = this.#states.get(cell)
    if (!st) {
      let img = cell.querySelector("img.thumbd-img")
      if (!img) cell.append(img = Object.assign(document.createElement("img"), { className: "thumbd-img", alt: "" }))
      st = { slot: "s" + ++this.#slotCount, token: 0, asset: null, kind: null, img, shown: "empty",
        request: null, retryTimer: 0, objectURL: null, slotUsed: false, failed: false }
      this.#states.set(cell, st)
    }
    return st
  }

  /** Shows nothing (the cell's background) and frees the thumbnail's blob. */
  #clear(st, asset) {
    if (asset != null) Object.assign(st.img.dataset, { asset, state: "empty" })
    st.img.removeAttribute("src")
    if (st.objectURL) URL.revokeObjectURL(st.objectURL)
    st.objectURL = null
  }

  /** The paintable data URL of a known placeholder (decoded on first use), or null. */
  #placeholderSource(asset) {
    const known = this.#knownPlaceholders.get(asset)
    if (known && !known.source) {
      try { if (known.thumbhash) known.source = thumbHashToDataURL(base64ToBytes(known.thumbhash)) } catch { /* bad hash: colour */ }
      if (!known.source && /^#[0-9a-f]{6}([0-9a-f]{2})?$/i.test(known.averageColor ?? "")) known.source = colorDataURL(known.averageColor)
    }
    return known?.source ?? null
  }

  /** Ends the cell's current fetch: aborted with cancel on, else left to finish and be dropped unpainted. */
  #stop(st) {
    clearTimeout(st.retryTimer)
    const request = st.request
    Object.assign(st, { retryTimer: 0, request: null })
    if (!request || !this.cancel) return
    request.controller.abort()
    if (request.started) this.stats.requestsAborted++
  }

  #releaseSlot(st) {
    st.slotUsed = false
    const url = `${this.base}/v1/slots/${encodeURIComponent(this.client)}/${encodeURIComponent(st.slot)}`
    // keepalive: the release reaches the daemon even when the page is going away; past the
    // quota (a fast scroll releases many) a plain fetch does as well while the page lives.
    const keepalive = this.#keepalivesInFlight < KEEPALIVE_RELEASES_IN_FLIGHT
    this.#keepalivesInFlight += keepalive ? 1 : 0
    fetch(url, { method: "DELETE", keepalive }).catch(() => {}).finally(() => { this.#keepalivesInFlight -= keepalive ? 1 : 0 })
  }

  /** `asset` is what the pixels are of (the answer's own asset, not the cell's model): the DOM
   *  says what is shown, so that a watcher can tell a stale paint. */
  #paint(cell, st, asset, state, source) {
    const { img, token } = st
    img.dataset.asset = asset
    img.dataset.state = state
    img.src = source
    st.shown = state
    this.stats[state === "placeholder" ? "placeholdersPainted" : "thumbnailsPainted"]++
    const announce = () => {
      if (st.token === token) cell.dispatchEvent(new CustomEvent("thumbd:paint", { bubbles: true, detail: { asset, state, token } }))
    }
    // decode() rejects when a newer paint replaced the source first: then nothing is announced.
    if (state === "placeholder") announce(); else img.decode().then(announce, () => {})
  }

  /** Once a frame: one placeholder request for the frame's binds, then their thumbnails. */
  #flush() {
    this.#frame = 0
    const binds = [...this.#queued].map((cell) => { const st = this.#states.get(cell); return { cell, st, token: st.token, asset: st.asset } })
    this.#queued.clear()
    const unpainted = binds.filter((bind) => bind.st.shown === "empty")
    if (this.placeholders && unpainted.length) this.#askPlaceholders(unpainted, true)
    for (const { cell, st } of binds) this.#consider(cell, st)
  }

  #askPlaceholders(binds, mayRetry) {
    const assets = [...new Set(binds.map((bind) => bind.asset))]
    for (let start = 0; start < assets.length; start += PLACEHOLDER_BATCH_ASSETS) {
      const batch = new Set(assets.slice(start, start + PLACEHOLDER_BATCH_ASSETS))
      const answered = this.#askPlaceholderBatch(batch, binds, mayRetry) // never rejects
      for (const asset of batch) this.#placeholderAnswers.set(asset, answered)
      answered.then(() => { for (const asset of batch) if (this.#placeholderAnswers.get(asset) === answered) this.#placeholderAnswers.delete(asset) })
    }
  }

  async #askPlaceholderBatch(assets, binds, mayRetry) {
    this.stats.placeholderRequests++
    let answers
    try {
      const response = await fetch(this.base + "/v1/placeholders", { method: "POST", body: JSON.stringify({ assets: [...assets] }),
        headers: { "Content-Type": "application/json", Accept: "application/json" } })
      if (!response.ok) return
      answers = (await response.json()).placeholders ?? {}
    } catch { return }
    const pending = []
    for (const bind of binds.filter((bind) => assets.has(bind.asset))) {
      const answer = answers[bind.asset]
      if (answer?.status === "pending") pending.push(bind)
      if (answer?.status !== "ready") continue
      if (!this.#knownPlaceholders.has(bind.asset)) this.rememberPlaceholder(bind.asset, answer)
      const source = this.#placeholderSource(bind.asset)
      if (!source) continue
      if (bind.st.token !== bind.token) this.stats.stalePaintsPrevented++
      else if (bind.st.shown === "thumbnail") this.stats.placeholdersLate++ // never covers the real thing
      else if (bind.st.shown === "empty") this.#paint(bind.cell, bind.st, bind.asset, "placeholder", source)
    }
    if (mayRetry && pending.length) {
      setTimeout(() => {
        const current = pending.filter((bind) => bind.st.token === bind.token && bind.st.shown === "empty")
        if (current.length) this.#askPlaceholders(current, false)
      }, PENDING_PLACEHOLDER_RETRY_MS)
    }
  }

  /** Fetches the cell's thumbnail if it is visible (or near, ahead of the scroll) and not asked yet. */
  #consider(cell, st) {
    if (st.asset == null || st.shown === "thumbnail" || st.failed || st.request || st.retryTimer || this.#queued.has(cell)) return
    if (this.#flinging) return // the fling's end considers every bound cell again
    const where = this.#where(cell)
    // Prefetches wait for the screen: a browser has six connections to a host, and a prefetch
    // holding one while the daemon renders what is visible first would keep a visible one out.
    if (where === "ahead" && this.prefetch && this.#visibleLoads === 0) this.#load(cell, st, "prefetch")
    else if (where === "visible") this.#load(cell, st, "visible")
  }

  /** "visible", "ahead" (within one screen in the scroll direction) or "behind" (anything else). */
  #where(cell) {
    const r = cell.getBoundingClientRect()
    const v = this.root ? this.root.getBoundingClientRect() : { top: 0, left: 0, bottom: innerHeight, right: innerWidth }
    if (r.width === 0 && r.height === 0) return "behind" // not laid out (display: none, detached)
    if (r.bottom > v.top && r.top < v.bottom && r.right > v.left && r.left < v.right) return "visible"
    const screen = v.bottom - v.top
    const ahead = this.#direction > 0 ? r.top >= v.bottom && r.top < v.bottom + screen : r.bottom <= v.top && r.bottom > v.top - screen
    return ahead ? "ahead" : "behind"
  }

  #nearChanged(entries) {
    for (const { target, isIntersecting } of entries) {
      if (isIntersecting && this.#bound.has(target)) this.#consider(target, this.#states.get(target))
    }
  }

  #currentScrollTop() {
    return this.root ? this.root.scrollTop : (globalThis.scrollY ?? 0)
  }

  /** Once a frame while scrolling: the direction; a reversal withdraws the prefetches left behind. */
  #scrolled() {
    this.#scrollFrame = 0
    const top = this.#currentScrollTop(), delta = top - this.#scrollTop
    this.#scrollTop = top
    if (this.cancel) this.#noteSpeed(delta)
    if (delta !== 0 && Math.sign(delta) !== this.#direction) {
      this.#direction = Math.sign(delta)
      for (const cell of this.cancel ? this.#bound : []) {
        const st = this.#states.get(cell)
        if (st.request?.priority !== "prefetch" || this.#where(cell) !== "behind") continue
        this.#stop(st)
        this.stats.prefetchesWithdrawn++
        this.#releaseSlot(st)
      }
    }
    // Cells already near (so no new IntersectionObserver entry) may have come into view or ahead.
    for (const cell of this.#bound) this.#consider(cell, this.#states.get(cell))
  }

  /** A fling starts when a frame's scroll is faster than FLING_SCREENS_PER_SECOND, and ends
   *  FLING_SETTLE_MS after the last such frame: then the cells in view (and ahead) are fetched. */
  #noteSpeed(delta) {
    const now = performance.now(), elapsed = now - this.#scrolledAt
    this.#scrolledAt = now
    const screen = this.root ? this.root.clientHeight : (globalThis.innerHeight ?? 0)
    if (!(elapsed > 0 && elapsed < 250 && screen > 0 && (Math.abs(delta) / elapsed) * 1000 > FLING_SCREENS_PER_SECOND * screen)) return
    this.#flinging = true
    clearTimeout(this.#flingTimer)
    this.#flingTimer = setTimeout(() => {
      this.#flinging = false
      this.#flingTimer = 0
      for (const cell of this.#bound) this.#consider(cell, this.#states.get(cell))
    }, FLING_SETTLE_MS)
  }

  async #load(cell, st, priority, isRetry = false) {
    const { token, asset, kind } = st
    const request = st.request = { priority, controller: this.cancel ? new AbortController() : null, started: false }
    if (priority === "visible") this.#visibleLoads++
    try {
      await this.ready
      let url = await this.#thumbnailURL(kind, asset)
      if (st.request !== request) return // stopped while the URL was being signed
      if (this.cancel) {
        url = joinQuery(url, `client=${encodeURIComponent(this.client)}&slot=${encodeURIComponent(st.slot)}&token=${token}`)
        st.slotUsed = true
      }
      request.started = true
      this.stats.requestsStarted++
      const response = await fetch(joinQuery(url, `priority=${priority}`),
        { signal: request.controller?.signal, headers: { Accept: this.accept }, priority: priority === "visible" ? "high" : "low" })
      if (!response.ok) return this.#failed(cell, st, request, token, isRetry, await failure(response))
      const blob = await response.blob()
      this.stats.bytesReceived += blob.size
      if (st.token !== token) { this.stats.stalePaintsPrevented++; return }
      // Decoded off-screen first, so the swap from the placeholder shows no empty frame.
      const objectURL = URL.createObjectURL(blob)
      const probe = Object.assign(new Image(), { src: objectURL })
      const decoded = await probe.decode().then(() => true, () => false)
      if (st.token !== token || !decoded) {
        URL.revokeObjectURL(objectURL)
        if (decoded) this.stats.stalePaintsPrevented++
        else this.#reportFailure(cell, token, asset, response.status, "undecodable", "the browser could not decode the thumbnail")
        return
      }
      // The placeholder first, always: a thumbnail that outran its placeholder's answer waits for it.
      const answering = st.shown === "empty" && this.#placeholderAnswers.get(asset)
      if (answering) await within(answering, PLACEHOLDER_WAIT_CAP_MS)
      if (st.token !== token) { URL.revokeObjectURL(objectURL); this.stats.stalePaintsPrevented++; return }
      const placeholder = st.shown === "empty" && this.#placeholderSource(asset)
      if (placeholder) this.#paint(cell, st, asset, "placeholder", placeholder)
      const previous = st.objectURL
      st.objectURL = objectURL
      this.#paint(cell, st, asset, "thumbnail", objectURL)
      if (previous) URL.revokeObjectURL(previous)
    } catch (error) {
      // A network failure (Chrome also refuses requests past its quota of them): asked again once.
      const failure = { status: 0, error: "network", message: String(error?.message ?? error), delayMs: RETRY_AFTER_CAP_MS }
      if (error?.name !== "AbortError") this.#failed(cell, st, request, token, isRetry, failure)
    } finally {
      if (st.request === request) st.request = null
      if (priority === "visible" && --this.#visibleLoads === 0 && this.prefetch) {
        for (const bound of this.#bound) this.#consider(bound, this.#states.get(bound)) // the screen is done: the next one
      }
    }
  }

  /** A failed request: asked again once if it is worth it (`delayMs` not null) and still current, else reported. */
  #failed(cell, st, request, token, isRetry, { status, error, message, delayMs }) {
    const current = st.request === request && st.token === token
    if (delayMs !== null && current && !isRetry) {
      st.retryTimer = setTimeout(() => {
        st.retryTimer = 0
        if (st.token === token) this.#load(cell, st, request.priority, true)
      }, delayMs)
    } else if (status !== 409) {
      this.#reportFailure(cell, token, st.asset, status, error, message)
    } else if (current) {
      st.failed = true // a 409 of the current request even when asked again: a re-bind asks once more
    }
  }

  #reportFailure(cell, token, asset, status, error, message) {
    this.stats.requestsFailed++
    const st = this.#states.get(cell)
    if (st?.token !== token) return
    st.failed = true
    cell.dispatchEvent(new CustomEvent("thumbd:error", { bubbles: true, detail: { asset, token, status, error, message } }))
  }

  /** The thumbnail's URL before the slot parameters: signed in batches when `sign` is given. */
  #thumbnailURL(kind, asset) {
    if (!this.sign) {
      const path = asset.split("/").map(encodeURIComponent).join("/")
      return Promise.resolve(`${this.base}/v1/thumbnails/${encodeURIComponent(kind)}/${path}?scale=${this.scale}`)
    }
    const key = `${kind}\0${asset}\0${this.scale}`
    const cached = this.#signedURLs.get(key)
    if (cached?.expiresSeconds > Date.now() / 1000 + SIGNED_URL_MARGIN_SECONDS) return Promise.resolve(cached.url)
    return new Promise((resolve, reject) => {
      // Every URL asked in this task (a frame's worth of cells) goes to one sign() call.
      if (!this.#toSign.length) queueMicrotask(() => this.#signBatch())
      this.#toSign.push({ key, request: { kind, asset, scale: this.scale }, resolve, reject })
    })
  }

  async #signBatch() {
    const batch = this.#toSign
    this.#toSign = []
    let urls
    try { urls = await this.sign(batch.map((item) => item.request)) } catch (error) { for (const item of batch) item.reject(error); return }
    batch.forEach((item, index) => {
      if (typeof urls?.[index] !== "string") return item.reject(new Error(`sign() gave no URL for ${item.request.asset}`))
      const url = urls[index].startsWith("/") ? this.base + urls[index] : urls[index]
      const expires = Number(new URL(url, "http://thumbd.invalid").searchParams.get("expires") ?? Infinity)
      remember(this.#signedURLs, item.key, { url, expiresSeconds: Number.isNaN(expires) ? Infinity : expires }, SIGNED_URL_CACHE_ENTRIES)
      item.resolve(url)
    })
  }
}
