/**
 * What every HTML the service writes shares, whoever writes it (our pages, the mail, the docs and
 * the OAuth server's pages): text escaped for HTML, and the security policy of a page.
 */

/** Text as HTML text or an attribute value: `&`, `<`, `>`, and both quotes escaped. */
export const escapeHtml = (text: string) =>
  text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")

/** What a page may use besides its own inline style; everything else is refused. */
export interface PageSources {
  /** Origins (besides the service) a form on the page may end at (Chromium checks the redirect too). */
  readonly formTargets?: ReadonlyArray<string>
  /** The inline scripts the page runs, as `'sha256-...'` sources. */
  readonly scripts?: ReadonlyArray<string>
  readonly images?: ReadonlyArray<string>
  readonly fonts?: ReadonlyArray<string>
  /** Where the page's scripts may send requests. */
  readonly connect?: ReadonlyArray<string>
}

const directive = (name: string, sources: ReadonlyArray<string> | undefined) =>
  sources === undefined || sources.length === 0 ? "" : `; ${name} ${sources.join(" ")}`

/**
 * The Content-Security-Policy of a page: nothing from anywhere by default, its inline style, what
 * `sources` names, no `<base>`, forms only to the service, and never inside a frame.
 */
export const contentSecurityPolicy = (sources: PageSources = {}) =>
  `default-src 'none'; style-src 'unsafe-inline'${directive("script-src", sources.scripts)}${directive("img-src", sources.images)}${directive("font-src", sources.fonts)}${directive("connect-src", sources.connect)}; base-uri 'none'; form-action 'self'${(
    sources.formTargets ?? []
  )
    .map((origin) => ` ${origin}`)
    .join("")}; frame-ancestors 'none'`

/** Headers every HTML answer carries; a page that needs more than the default policy sets its own CSP. */
export const htmlSecurityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy(),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // Only to the service: its addresses may hold a link token, and with `no-referrer` a browser
  // sends `Origin: null` with the pages' own forms, which the forms' origin check refuses.
  "referrer-policy": "same-origin"
}
