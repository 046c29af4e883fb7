import { spawn } from "node:child_process"
import { Effect } from "effect"

/** Opens a URL in the desktop's browser when there is one; says whether it tried. */
export const openBrowser = (url: string) =>
  Effect.sync(() => {
    if (process.env.SVC_NO_BROWSER || process.stdout.isTTY !== true) return false
    const opener =
      process.platform === "darwin"
        ? "open"
        : process.platform === "win32"
          ? "explorer"
          : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
            ? "xdg-open"
            : undefined
    if (opener === undefined) return false
    try {
      spawn(opener, [url], { stdio: "ignore", detached: true })
        .on("error", () => {})
        .unref()
      return true
    } catch {
      return false
    }
  })
