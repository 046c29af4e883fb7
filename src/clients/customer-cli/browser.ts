import { spawn } from "node:child_process"
import { Effect } from "effect"

/** The command that opens a URL: `$BROWSER` when set, else the desktop's opener on a terminal with a display. */
const opener = (): string | undefined => {
  if (process.env.BROWSER) return process.env.BROWSER
  if (process.stdout.isTTY !== true) return undefined
  if (process.platform === "darwin") return "open"
  if (process.platform === "win32") return "explorer"
  return process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? "xdg-open" : undefined
}

/** Opens a URL in a browser when there is one (never with SVC_NO_BROWSER set); says whether it tried. */
export const openBrowser = (url: string) =>
  Effect.sync(() => {
    const command = process.env.SVC_NO_BROWSER ? undefined : opener()
    if (command === undefined) return false
    try {
      spawn(command, [url], { stdio: "ignore", detached: true })
        .on("error", () => {})
        .unref()
      return true
    } catch {
      return false
    }
  })
