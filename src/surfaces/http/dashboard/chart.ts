import { html } from "../pages/html.ts"

/** One UTC day's credits, split by platform ("unsplit" holds what no scanned receipt explains). */
export interface DayUsage {
  readonly day: string
  readonly byPlatform: Readonly<Record<string, number>>
  readonly total: number
  readonly calls: number
}

/** Colours with at least 3:1 contrast on white, told apart by the legend and the table too. */
const colours = ["#1f5fa8", "#b35900", "#2e7d32", "#6a3d9a", "#5f6368"]

const niceMax = (max: number) => {
  if (max <= 0) return 10
  const magnitude = 10 ** Math.floor(Math.log10(max))
  const step = [1, 2, 5, 10].map((factor) => factor * magnitude).find((top) => top >= max) ?? 10 * magnitude
  return step
}

/**
 * Credits per day as stacked bars, drawn on the server: the days of the last 30 from the first with
 * any use, left to right, each bar at most a seventh of the plot wide (one day of data is one bar at
 * the left, under its date, not a sliver at the far right of 29 empty days). The SVG is one image
 * with a text alternative; the numbers themselves are in the table after it.
 */
export const usageChart = (all: ReadonlyArray<DayUsage>, platforms: ReadonlyArray<string>) => {
  const firstUsed = all.findIndex((day) => day.total > 0 || day.calls > 0)
  const days = firstUsed < 0 ? all : all.slice(firstUsed)
  // Small enough that its 12-unit labels stay readable on a 360 px phone.
  const width = 400
  const height = 180
  const left = 40
  const bottom = 22
  const plotWidth = width - left - 8
  const plotHeight = height - bottom - 10
  const top = niceMax(Math.max(0, ...days.map((day) => day.total)))
  const barWidth = plotWidth / Math.max(7, days.length)
  const y = (credits: number) => (credits / top) * plotHeight
  const total = days.reduce((sum, day) => sum + day.total, 0)
  const bars = days.map((day, index) => {
    let base = height - bottom
    return platforms.map((platform, p) => {
      const credits = day.byPlatform[platform] ?? 0
      if (credits === 0) return html``
      const h = y(credits)
      base -= h
      return html`<rect x="${(left + index * barWidth + 1).toFixed(1)}" y="${base.toFixed(1)}" width="${Math.max(1, barWidth - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${colours[p % colours.length]!}"><title>${day.day}: ${credits} credits (${platform})</title></rect>`
    })
  })
  const ticks = [0, top / 2, top].map(
    (value) =>
      html`<text x="${left - 4}" y="${(height - bottom - y(value) + 4).toFixed(1)}" text-anchor="end" font-size="12" fill="#1a1a1a">${Math.round(value)}</text><line x1="${left}" x2="${width - 8}" y1="${(height - bottom - y(value)).toFixed(1)}" y2="${(height - bottom - y(value)).toFixed(1)}" stroke="#ccc"/>`
  )
  const first = days[0]?.day ?? ""
  const last = days[days.length - 1]?.day ?? ""
  return html`<figure class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title">
<title id="chart-title">Credits per day from ${first} to ${last}: ${total} in all. The table below has each day's numbers.</title>
${ticks}${bars}
<text x="${left}" y="${height - 6}" font-size="12" fill="#1a1a1a">${first}</text>${
    // Two dates side by side would overlap under two or three bars: the first says where they start.
    days.length < 4
      ? ""
      : html`<text x="${(left + days.length * barWidth).toFixed(1)}" y="${height - 6}" font-size="12" text-anchor="end" fill="#1a1a1a">${last}</text>`
  }
</svg><figcaption class="legend">${platforms.map(
    (platform, p) => html`<span style="background:${colours[p % colours.length]!}"></span>${platform}`
  )}</figcaption></figure>`
}

/** The chart's numbers: only the days with any use, newest first. */
export const usageTable = (days: ReadonlyArray<DayUsage>, platforms: ReadonlyArray<string>) => {
  const used = days.filter((day) => day.total > 0 || day.calls > 0).reverse()
  if (used.length === 0)
    return html`<p>No calls were charged in the last 30 days. Make a call with one of your keys (for example
<code>GET /v1/usage</code> is free, a data call is not) and it shows here.</p>`
  return html`<table tabindex="0"><caption>Credits per day (UTC), last 30 days</caption>
<thead><tr><th scope="col">Day</th>${platforms.map((platform) => html`<th scope="col">${platform}</th>`)}<th scope="col">Total credits</th><th scope="col">Calls</th></tr></thead>
<tbody>${used.map(
    (day) =>
      html`<tr><th scope="row">${day.day}</th>${platforms.map(
        (platform) => html`<td class="n">${day.byPlatform[platform] ?? 0}</td>`
      )}<td class="n">${day.total}</td><td class="n">${day.calls}</td></tr>`
  )}</tbody></table>`
}
