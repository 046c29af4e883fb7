import { type ErrorCode, errorCatalog } from "../../contract/errors.ts"

const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** `/docs/errors`: one anchor per code, the target of every problem's `doc_url`. */
export const errorDocsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error codes</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}code{background:#f3f3f3;padding:0 .2rem}section{border-top:1px solid #ddd;padding:.5rem 0}</style>
</head><body><h1>Error codes</h1>
<p>Every error is <code>application/problem+json</code> with <code>code</code>, <code>message</code>, <code>is_retriable</code> and <code>doc_url</code>. A failed call is never charged.</p>
${(Object.entries(errorCatalog) as Array<[ErrorCode, (typeof errorCatalog)[ErrorCode]]>)
  .map(
    ([
      code,
      spec
    ]) => `<section id="${code}"><h2><code>${code}</code> &middot; HTTP ${spec.status}${spec.retriable ? " &middot; retriable" : ""}</h2>
<p><strong>${escapeHtml(spec.title)}.</strong> ${escapeHtml(spec.next)}</p></section>`
  )
  .join("\n")}
</body></html>`
