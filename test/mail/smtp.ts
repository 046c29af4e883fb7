import { createServer } from "node:net"
import { Effect } from "effect"
import PostalMime from "postal-mime"
import { SMTPServer } from "smtp-server"

export interface Received {
  readonly from: string | undefined
  readonly to: ReadonlyArray<string>
  readonly subject: string | undefined
  readonly text: string | undefined
  readonly html: string | undefined
  readonly user: string | undefined
}

/** A port nothing listens on (yet): bound once by the OS, then released. */
export const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const probe = createServer()
      probe.once("error", reject)
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        probe.close(() => resolve(port))
      })
    })
)

/**
 * A real SMTP server on 127.0.0.1 (plain, AUTH allowed without TLS), parsing every message it
 * accepts with postal-mime. `rejecting` makes it answer 451 (try later) to every message.
 */
export const smtpServer = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const received: Array<Received> = []
      const state = { rejecting: false }
      const server = new SMTPServer({
        authOptional: true,
        allowInsecureAuth: true,
        disabledCommands: ["STARTTLS"],
        logger: false,
        onAuth: (auth, _session, callback) =>
          auth.username === "mailer" && auth.password === "s3cret"
            ? callback(null, { user: auth.username })
            : callback(new Error("Invalid username or password")),
        onData: (stream, session, callback) => {
          const chunks: Array<Buffer> = []
          stream.on("data", (chunk: Buffer) => chunks.push(chunk))
          stream.on("end", () => {
            if (state.rejecting) {
              const error = Object.assign(new Error("Try again later"), { responseCode: 451 })
              return callback(error)
            }
            PostalMime.parse(Buffer.concat(chunks)).then(
              (email) => {
                received.push({
                  from: email.from?.address,
                  to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
                  subject: email.subject,
                  text: email.text,
                  html: email.html,
                  user: typeof session.user === "string" ? session.user : undefined
                })
                callback()
              },
              (error: Error) => callback(error)
            )
          })
        }
      })
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject)
        server.listen(port, "127.0.0.1", () => resolve())
      })
      return {
        received,
        setRejecting: (rejecting: boolean) => {
          state.rejecting = rejecting
        },
        server
      }
    }),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )
