/**
 * The credential of `Authorization: Bearer <credential>`, the one reading of that header for every
 * surface (data routes, the HttpApi's key and token middleware, governance routes, MCP, the
 * operator RPC, the metrics page). RFC 9110 11.1: the scheme in any case, then one or more spaces;
 * undefined for no header, another scheme or nothing after it.
 */
// hot path
export const bearerCredential = (authorization: string | undefined): string | undefined => {
  if (authorization === undefined || authorization.length <= 6 || authorization.charCodeAt(6) !== 32)
    return undefined
  if (authorization.slice(0, 6).toLowerCase() !== "bearer") return undefined
  let start = 7
  while (authorization.charCodeAt(start) === 32) start++
  return start === authorization.length ? undefined : authorization.slice(start)
}
