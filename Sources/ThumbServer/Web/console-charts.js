// console-charts.js — the console's "daemon at a glance" view (served at /console/console-charts.js).
// Polls /metrics once a second, keeps the last 120 samples and draws each chart as a hand-written
// SVG sparkline. Counters become rates from consecutive samples; a counter that went down (the
// daemon restarted) counts from zero, as Prometheus's rate() does.

const POLL_MS = 1000
const KEPT_SAMPLES = 120
const CHART_WIDTH_PX = 260
const CHART_HEIGHT_PX = 56
/** The console's palette and SVG namespace, shared with console.js. */
export const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"]
export const SVG = "http://www.w3.org/2000/svg"

/** Prometheus text format, tolerantly: `name{label="value",…} number [timestamp]`; comments skipped. */
export function parsePrometheus(text) {
  const series = new Map() // metric name → [{labels, value}]
  for (const line of text.split("\n")) {
    const match = /^\s*([A-Za-z_:][\w:]*)\s*(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (!match || line.trimStart().startsWith("#")) continue
    const [, name, labelText = "", valueText] = match
    const value = /^\+?Inf$/i.test(valueText) ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText)
    if (Number.isNaN(value) && valueText !== "NaN") continue // not a sample line
    const labels = {}
    for (const [, key, raw] of labelText.matchAll(/([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels[key] = raw.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c))
    }
    if (!series.has(name)) series.set(name, [])
    series.get(name).push({ labels, value })
  }
  return series
}

/** Sum of a metric over its label sets (null when the daemon does not export it). */
function total(metrics, name) {
  const rows = metrics.get(name)
  return rows ? rows.reduce((sum, row) => sum + row.value, 0) : null
}

/** A metric's values by one label: {labelValue: value}. */
function byLabel(metrics, name, label) {
  const values = {}
  for (const row of metrics.get(name) ?? []) values[row.labels[label] ?? ""] = (values[row.labels[label] ?? ""] ?? 0) + row.value
  return values
}

/** Growth of a counter between two samples; a reset (restart) counts from zero. */
function growth(now, before) {
  if (now == null || before == null) return null
  return now >= before ? now - before : now
}

const perSecond = (now, before, seconds) => { const g = growth(now, before); return g == null ? null : g / seconds }
const number = (value) => (value == null ? "–" : Math.abs(value) >= 100 || Number.isInteger(value) ? value.toFixed(0) : value.toFixed(2))
const percent = (value) => (value == null ? "–" : (value * 100).toFixed(1) + " %")

// Each chart: its data-metric name, a title, and its series from two consecutive samples
// ({cur, prev}: parsed metrics; seconds between them) as {seriesName: value or null}.
const CHARTS = [
  { metric: "queue_depth", title: "Queue depth", series: ({ cur }) => byLabel(cur, "thumbd_queue_depth", "priority") },
  {
    metric: "hit_ratio", title: "Cache hit ratio", format: percent, max: 1,
    series: ({ cur, prev }) => {
      const hits = growth(total(cur, "thumbd_cache_hits_total"), total(prev, "thumbd_cache_hits_total"))
      const misses = growth(total(cur, "thumbd_cache_misses_total"), total(prev, "thumbd_cache_misses_total"))
      return { "hit ratio": hits + misses > 0 ? hits / (hits + misses) : null }
    },
  },
  {
    metric: "renders_per_second", title: "Renders per second",
    series: ({ cur, prev, seconds }) => cur.has("thumbd_render_seconds_count")
      ? { renders: perSecond(total(cur, "thumbd_render_seconds_count"), total(prev, "thumbd_render_seconds_count"), seconds) }
      // Without the histogram: CPU seconds of rendering per second, the nearest measure of work done.
      : { "render CPU s/s": perSecond(total(cur, "thumbd_render_cpu_seconds_total"), total(prev, "thumbd_render_cpu_seconds_total"), seconds) },
  },
  {
    metric: "running_renders", title: "Running renders / workers",
    series: ({ cur, prev }) => ({ running: total(cur, "thumbd_running_renders"),
      "worker restarts": growth(total(cur, "thumbd_worker_restarts_total"), total(prev, "thumbd_worker_restarts_total")) }),
    note: ({ cur }) => `${number(total(cur, "thumbd_worker_spawns_total"))} workers started, restarts `
      + (Object.entries(byLabel(cur, "thumbd_worker_restarts_total", "reason")).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(", ") || "none"),
  },
  {
    metric: "failures", title: "Render failures by code (per second)",
    series: ({ cur, prev, seconds }) => {
      const now = byLabel(cur, "thumbd_render_failures_total", "code"), before = byLabel(prev, "thumbd_render_failures_total", "code")
      return Object.fromEntries(Object.keys(now).map((code) => [code, perSecond(now[code], before[code] ?? 0, seconds)]))
    },
    hideZeroSeries: true, // every known code is exported from the start, at 0
    note: ({ cur }) => Object.entries(byLabel(cur, "thumbd_render_failures_total", "code")).filter(([, v]) => v > 0)
      .map(([code, v]) => `${code} ${v}`).join(", ") || "no failures",
  },
  { metric: "backlog_assets", title: "Backlog assets", series: ({ cur }) => ({ backlog: total(cur, "thumbd_backlog_assets") }) },
  {
    metric: "superseded_cancelled", title: "Superseded + cancelled per second",
    series: ({ cur, prev, seconds }) => ({
      superseded: perSecond(total(cur, "thumbd_superseded_total"), total(prev, "thumbd_superseded_total"), seconds),
      cancelled: perSecond(total(cur, "thumbd_cancelled_total"), total(prev, "thumbd_cancelled_total"), seconds) }),
  },
  {
    metric: "wasted_cpu", title: "Wasted render CPU (s per s)",
    series: ({ cur, prev, seconds }) => ({ wasted: perSecond(total(cur, "thumbd_wasted_render_cpu_seconds_total"),
      total(prev, "thumbd_wasted_render_cpu_seconds_total"), seconds) }),
    note: ({ cur }) => `${number(total(cur, "thumbd_wasted_render_cpu_seconds_total"))} s in all`,
  },
]

function element(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text != null) node.textContent = text
  return node
}

/** One chart's section: title, current value, sparkline, legend, note. */
function buildChart(chart) {
  const section = element("section", "chart")
  section.dataset.metric = chart.metric
  const head = element("header")
  head.append(element("h3", null, chart.title), element("span", "value", "–"))
  const svg = document.createElementNS(SVG, "svg")
  svg.setAttribute("viewBox", `0 0 ${CHART_WIDTH_PX} ${CHART_HEIGHT_PX}`)
  svg.setAttribute("preserveAspectRatio", "none")
  svg.setAttribute("class", "sparkline")
  section.append(head, svg, element("div", "legend"), element("div", "note"))
  return section
}

/** Draws `points` (per series: values or nulls, oldest first, one per sample pair) in the section. */
function drawChart(section, chart, points, note) {
  const names = Object.keys(points).filter((name) => !chart.hideZeroSeries || points[name].some((v) => v))
  const values = names.flatMap((name) => points[name]).filter((v) => v != null && Number.isFinite(v))
  const max = chart.max ?? Math.max(1e-9, ...values)
  const svg = section.querySelector("svg")
  svg.replaceChildren()
  const step = CHART_WIDTH_PX / (KEPT_SAMPLES - 2)
  names.forEach((name, index) => {
    const series = points[name], offset = KEPT_SAMPLES - 1 - series.length // newest at the right edge
    // A null (a series absent from a sample) breaks the line into separate polylines.
    let run = []
    const flush = () => {
      if (run.length === 1) run.unshift([run[0][0] - step / 2, run[0][1]]) // a lone point: a short dash
      if (run.length > 1) {
        const line = document.createElementNS(SVG, "polyline")
        line.setAttribute("points", run.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" "))
        line.setAttribute("fill", "none")
        line.setAttribute("stroke", COLORS[index % COLORS.length])
        line.setAttribute("stroke-width", "1.5")
        line.setAttribute("vector-effect", "non-scaling-stroke")
        svg.append(line)
      }
      run = []
    }
    series.forEach((value, i) => {
      if (value == null || !Number.isFinite(value)) return flush()
      const y = CHART_HEIGHT_PX - 2 - (Math.min(value, max) / max) * (CHART_HEIGHT_PX - 4)
      run.push([(offset + i) * step, y])
    })
    flush()
  })
  const format = chart.format ?? number
  const latest = names.map((name) => [name, points[name].at(-1)])
  section.querySelector(".value").textContent = latest.length === 1 ? format(latest[0][1])
    : latest.map(([name, value]) => `${name} ${format(value)}`).join(" · ") || "–"
  const legend = section.querySelector(".legend")
  legend.replaceChildren(...(names.length > 1 ? names.map((name, index) => {
    const item = element("span", "legend-item", name)
    item.style.color = COLORS[index % COLORS.length]
    return item
  }) : []))
  section.querySelector(".note").textContent = note ?? ""
}

/**
 * Starts polling into `container`. `onSamples(count)` after each sample, `onError(text)` on a
 * failed poll. Returns stop(): no timer is left running once the view is left.
 */
export function startCharts(container, { onSamples, onError } = {}) {
  const samples = [] // {seconds (monotonic), metrics}
  const sections = CHARTS.map(buildChart)
  container.replaceChildren(...sections)
  let timer = 0, stopped = false

  function redraw() {
    CHARTS.forEach((chart, index) => {
      const points = {}
      for (let i = 1; i < samples.length; i++) {
        const pair = { cur: samples[i].metrics, prev: samples[i - 1].metrics, seconds: samples[i].seconds - samples[i - 1].seconds }
        for (const [name, value] of Object.entries(chart.series(pair))) {
          points[name] ??= new Array(i - 1).fill(null)
          points[name].push(value)
        }
        for (const name in points) if (points[name].length < i) points[name].push(null)
      }
      const latest = samples.at(-1)
      drawChart(sections[index], chart, points, latest && chart.note ? chart.note({ cur: latest.metrics }) : "")
    })
  }

  async function poll() {
    const startedMs = performance.now()
    try {
      const response = await fetch("/metrics", { cache: "no-store" })
      if (!response.ok) throw new Error(`${response.status} ${response.statusText} from /metrics`)
      const metrics = parsePrometheus(await response.text())
      if (stopped) return
      samples.push({ seconds: startedMs / 1000, metrics })
      if (samples.length > KEPT_SAMPLES) samples.shift()
      redraw()
      onSamples?.(samples.length)
    } catch (error) {
      if (!stopped) onError?.(String(error?.message ?? error))
    }
    if (!stopped) timer = setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - startedMs)))
  }
  poll()
  return () => { stopped = true; clearTimeout(timer) }
}
