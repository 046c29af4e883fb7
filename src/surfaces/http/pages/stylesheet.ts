/**
 * The one stylesheet of every page the service renders (the public pages, the money pages, the
 * dashboard, the OAuth consent), hand-written, no framework and nothing fetched: each page carries
 * it inline, which the pages' policy (`style-src 'unsafe-inline'`) already admits, so a page is one
 * request. A type scale, one spacing step, a restrained palette whose text contrast passes WCAG AA,
 * three kinds of button, cards for figures, and tables that become stacked rows on a phone (each
 * cell labelled by its column, see `labelCells`).
 */
const css = `
:root{--ink:#1b1f24;--muted:#4d5661;--line:#d0d7de;--soft:#f6f8fa;--brand:#0a58a8;--brand-dark:#083f78;
--danger:#b42318;--ok:#116329;--warn-ink:#7a4100;--warn-bg:#fff1d6;--radius:8px;--space:1rem;
color-scheme:light}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#fff;overflow-wrap:anywhere}
a{color:var(--brand);text-underline-offset:2px}a:hover{color:var(--brand-dark)}
:focus-visible{outline:3px solid var(--brand);outline-offset:2px}
h1{font-size:1.75rem;line-height:1.2;margin:1.25rem 0 .75rem;letter-spacing:-.01em}
h2{font-size:1.25rem;line-height:1.3;margin:2rem 0 .5rem}
h3{font-size:1.05rem;margin:1.25rem 0 .4rem}
p,ul,ol,dl,pre,table,form{margin:0 0 var(--space)}
li{margin:.2rem 0}
code{font:.9em/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:0 .25em}
pre{background:var(--soft);border:1px solid var(--line);border-radius:var(--radius);padding:.75rem;overflow-x:auto;max-width:100%}
pre code{border:0;padding:0;background:none;white-space:pre}
.site{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.25rem;padding:.75rem 1rem;border-bottom:1px solid var(--line);background:#fff}
.brand{font-weight:700;color:var(--ink);text-decoration:none;font-size:1.05rem;margin-right:auto}
.brand:hover{color:var(--brand)}
.site nav ul,.tabs ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0;padding:0}
.site nav a{color:var(--ink);text-decoration:none;padding:.35rem 0;display:inline-block}
.site nav a:hover{color:var(--brand);text-decoration:underline}
.site nav a.cta{color:#fff;background:var(--brand);border-radius:999px;padding:.35rem .9rem}
.site nav a.cta:hover{background:var(--brand-dark);color:#fff}
.badge{display:inline-block;font-size:.8rem;font-weight:700;letter-spacing:.03em;text-transform:uppercase;color:var(--warn-ink);background:var(--warn-bg);border:1px solid #e8c27a;border-radius:999px;padding:.1rem .6rem}
.who{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem .75rem;color:var(--muted);font-size:.95rem}
.who strong{color:var(--ink)}
.tabs{border-bottom:1px solid var(--line);padding:0 1rem;overflow-x:auto}
.tabs ul{flex-wrap:nowrap;gap:0}
.tabs a{display:block;padding:.6rem .75rem;color:var(--muted);text-decoration:none;border-bottom:3px solid transparent;white-space:nowrap}
.tabs a:hover{color:var(--ink)}
.tabs a[aria-current=page]{color:var(--ink);font-weight:600;border-bottom-color:var(--brand)}
main{max-width:60rem;margin:0 auto;padding:0 1rem 3rem}
main.narrow{max-width:44rem}
footer{max-width:60rem;margin:0 auto;padding:1rem;color:var(--muted);font-size:.9rem;border-top:1px solid var(--line)}
.lead{font-size:1.1rem;color:var(--muted)}
section{border-top:1px solid var(--line);padding-top:.5rem;margin-top:1.5rem}
label{display:block;margin:.75rem 0 .3rem;font-weight:600}
input,select,textarea{font:inherit;color:var(--ink);background:#fff;border:1px solid #8c959f;border-radius:6px;padding:.5rem .65rem;width:100%;max-width:26rem;min-height:2.75rem}
input[type=radio],input[type=checkbox]{width:auto;min-height:0;margin-right:.4rem;accent-color:var(--brand)}
input:focus,select:focus{border-color:var(--brand)}
button,.button{font:inherit;font-weight:600;display:inline-flex;align-items:center;justify-content:center;min-height:2.75rem;padding:.5rem 1.1rem;margin:.5rem .5rem .25rem 0;border-radius:6px;border:1px solid var(--brand);background:var(--brand);color:#fff;cursor:pointer;text-decoration:none}
button:hover,.button:hover{background:var(--brand-dark);border-color:var(--brand-dark);color:#fff}
button.secondary,.button.secondary,form.inline button{background:#fff;color:var(--ink);border-color:#8c959f}
button.secondary:hover,.button.secondary:hover,form.inline button:hover{background:var(--soft);color:var(--ink)}
button.danger,.danger{background:var(--danger);border-color:var(--danger);color:#fff}
button.danger:hover{background:#8f1b12;border-color:#8f1b12}
form.inline button.danger{background:#fff;color:var(--danger);border-color:var(--danger)}
form.inline button.danger:hover{background:#fff1f0;color:#8f1b12}
form.inline{display:inline}
.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end}.row label{margin-top:0}.row>div{flex:1 1 10rem}
.error,.note{border-radius:var(--radius);padding:.65rem .9rem;border:1px solid}
.error{color:#8f1b12;background:#fff1f0;border-color:#f3b9b3}
.note{color:var(--ok);background:#effaf1;border-color:#a9dcb3}
.secret{display:block;word-break:break-all;font-size:1.05rem;padding:.65rem}
.jws{display:block;word-break:break-all;font-size:.8em}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.75rem;margin:0 0 var(--space)}
.figure{border:1px solid var(--line);border-radius:var(--radius);padding:.85rem 1rem;background:#fff;box-shadow:0 1px 2px rgba(27,31,36,.06)}
.figure strong{display:block;font-size:1.5rem;line-height:1.3;font-variant-numeric:tabular-nums}
.card{border:1px solid var(--line);border-radius:var(--radius);padding:1rem;margin:0 0 var(--space)}
.items{list-style:none;padding:0}
.items>li{border:1px solid var(--line);border-radius:var(--radius);padding:.85rem 1rem;margin:.75rem 0}
.items dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .75rem;margin:.4rem 0}
.items dt{color:var(--muted)}.items dd{margin:0}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.25rem 0 .5rem}
th,td{border-bottom:1px solid var(--line);padding:.5rem .6rem;text-align:left;vertical-align:top}
thead th{background:var(--soft);font-weight:600;border-bottom-width:2px}
td.n{text-align:right}
.wide{overflow-x:auto;max-width:100%}
figure{margin:0}.chart svg{width:100%;height:auto;max-width:40rem}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 .8rem;vertical-align:middle;border-radius:2px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
@media (max-width:40rem){
h1{font-size:1.5rem}
main{padding:0 .75rem 2.5rem}
table.stack caption{display:block}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
table.stack,table.stack tbody,table.stack tr,table.stack th,table.stack td{display:block;width:100%}
table.stack tr{border:1px solid var(--line);border-radius:var(--radius);margin:0 0 .75rem;padding:.25rem .5rem}
table.stack th,table.stack td{border:0;padding:.3rem 0;text-align:left;display:flex;gap:1rem;justify-content:space-between}
table.stack [data-label]::before{content:attr(data-label);color:var(--muted);font-weight:600;flex:none}
button,.button{width:100%;margin-right:0}
form.inline button,.site button{width:auto}
}
`

/** Without line breaks or indentation: the same rules, a few hundred bytes fewer on every page. */
export const stylesheet = css
  .split("\n")
  .map((line) => line.trim())
  .join("")

/** The cell texts of a header row, tags and entities dropped: the labels of a stacked table. */
const headerLabels = (head: string) =>
  [...head.matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g)].map((match) =>
    match[1]!
      .replace(/<[^>]+>/g, "")
      .replace(/&[^;]+;/g, "")
      .trim()
  )

/**
 * Each body cell of each `<table>` labelled by its column (`data-label`, escaped as it was in
 * the header), and the table marked `stack`: on a phone the stylesheet shows each row as a card
 * of "label value" lines instead of a table wider than the screen.
 */
export const labelCells = (page: string) =>
  page.replace(/<table\b([^>]*)>([\s\S]*?)<\/table>/g, (_, attributes: string, inner: string) => {
    const head = /<thead>([\s\S]*?)<\/thead>/.exec(inner)?.[1]
    if (head === undefined) return `<table${attributes}>${inner}</table>`
    const labels = headerLabels(head)
    const body = inner.replace(
      /<tbody>([\s\S]*?)<\/tbody>/,
      (__, rows: string) =>
        `<tbody>${rows.replace(/<tr>([\s\S]*?)<\/tr>/g, (___, cells: string) => {
          let index = 0
          return `<tr>${cells.replace(/<(td|th)\b([^>]*)>/g, (____, tag: string, rest: string) => {
            const label = labels[index++]
            return label === undefined || label === ""
              ? `<${tag}${rest}>`
              : `<${tag}${rest} data-label="${label}">`
          })}</tr>`
        })}</tbody>`
    )
    return `<table class="stack"${attributes}>${body}</table>`
  })
