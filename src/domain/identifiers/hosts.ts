/** The platforms' hosts: bare and lower-case. They are configuration; `defaultHosts` are the defaults. */
export interface Hosts {
  readonly profnet: string
  readonly forum: string
  readonly microblog: string
}

export const defaultHosts: Hosts = { profnet: "profnet.com", forum: "forum.com", microblog: "microblog.com" }

/**
 * Labels of letters, digits and inner hyphens, then a top-level label of letters. No `www.` or `m.`
 * in front: URLs are read with those stripped, so a host carrying one would never match.
 */
const hostNamePattern = /^(?=.{4,253}$)(?!(?:www|m)\.)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/

export const isHostName = (text: string): boolean => hostNamePattern.test(text)

const platformsOf = Object.keys(defaultHosts) as ReadonlyArray<keyof Hosts>
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Text written with the default hosts (the declarations' descriptions) as it reads with `hosts`.
 * One pass, whole host names only: `forum.com` in `www.forum.com/c/x` changes, in `myforum.com` or
 * `forum.com.au` it does not, and a configured host is never itself rewritten.
 */
export const rehost = (hosts: Hosts): ((text: string) => string) => {
  const changed = platformsOf.filter((platform) => hosts[platform] !== defaultHosts[platform])
  if (changed.length === 0) return (text) => text
  const replacement = new Map(changed.map((platform) => [defaultHosts[platform], hosts[platform]]))
  const names = changed.map((platform) => escapeRegExp(defaultHosts[platform])).join("|")
  const pattern = new RegExp(`(?<![A-Za-z0-9-])(?:${names})(?![A-Za-z0-9-]|\\.[A-Za-z0-9])`, "g")
  return (text) => text.replace(pattern, (host) => replacement.get(host) ?? host)
}

/** `rehost` over every string of a JSON value (an OpenAPI document, a tool's JSON Schema); keys are kept. */
export const rehostJson = <A>(hosts: Hosts, value: A): A => {
  const text = rehost(hosts)
  const walk = (node: unknown): unknown =>
    typeof node === "string"
      ? text(node)
      : Array.isArray(node)
        ? node.map(walk)
        : node !== null && typeof node === "object"
          ? Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, walk(inner)]))
          : node
  return platformsOf.every((platform) => hosts[platform] === defaultHosts[platform])
    ? value
    : (walk(value) as A)
}
