/**
 * A slow step of a start said as it happens, on stderr, before the service's logger exists: what it
 * does as it begins, and how long it took once done, on the same line (`building the service
 * bundle… 12.3 s`). With `LOG_FORMAT=json`, one JSON line once done, as the service's log lines are.
 */
export const startStep = (what: string): ((outcome?: string) => void) => {
  const json = process.env.LOG_FORMAT?.toLowerCase() === "json"
  const began = performance.now()
  if (!json) process.stderr.write(`${what}\u2026 `)
  return (outcome) => {
    const seconds = `${((performance.now() - began) / 1000).toFixed(1)} s`
    const said = outcome === undefined ? seconds : `${outcome} (${seconds})`
    process.stderr.write(
      json
        ? `${JSON.stringify({ message: `${what}: ${said}`, level: "INFO", timestamp: new Date().toISOString() })}\n`
        : `${said}\n`
    )
  }
}
