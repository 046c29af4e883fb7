import { Effect, ManagedRuntime } from "effect"
import { AdminClient } from "../src/clients/operator-cli/AdminClient.ts"
import type { FaultsPatch } from "../src/contract/faults.ts"

export interface BenchAccount {
  readonly accountId: string
  readonly key: string
  /** The X-Forwarded-For it was minted from (the service trusts loopback as a proxy). */
  readonly ip: string
}

/** Runs `task` over `items`, `width` at a time. */
export const pool = async <A, B>(
  items: ReadonlyArray<A>,
  width: number,
  task: (item: A, index: number) => Promise<B>
): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await task(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane))
  return results
}

/** Distinct client addresses: the mint limit is 5 keys per IP per hour. */
export const ipOf = (group: number, i: number) => `10.${group}.${Math.floor(i / 250)}.${(i % 250) + 1}`

export const mint = async (baseUrl: string, ip: string): Promise<BenchAccount> => {
  const response = await fetch(`${baseUrl}/v1/keys/mint`, {
    method: "POST",
    headers: { "x-forwarded-for": ip }
  })
  const body = (await response.json()) as { key?: string; account_id?: string }
  if (response.status !== 200 || body.key === undefined || body.account_id === undefined) {
    throw new Error(`minting a key from ${ip} failed: ${response.status} ${JSON.stringify(body)}`)
  }
  return { accountId: body.account_id, key: body.key, ip }
}

/** The operator RPC of a running service (the same client `npm run cli -- admin ...` uses). */
export const adminOf = (baseUrl: string, token: string) => {
  const runtime = ManagedRuntime.make(AdminClient.layerFor(baseUrl, token))
  const run = <A, E>(f: (client: AdminClient["Service"]) => Effect.Effect<A, E>) =>
    runtime.runPromise(Effect.flatMap(AdminClient, f))
  return {
    production: (accountId: string, credits: number) =>
      run((client) =>
        Effect.andThen(
          client.plan({ accountId, plan: "production" }),
          client.credit({ accountId, credits, kind: "balance", reason: "bench" })
        )
      ),
    livePaused: (paused: boolean) => run((client) => client.live({ paused })),
    /** The simulated world's fault knobs. */
    faults: (patch: typeof FaultsPatch.Type) => run((client) => client.upstream(patch)),
    close: () => runtime.dispose()
  }
}

export type Admin = ReturnType<typeof adminOf>

/** `count` fresh accounts, each minted from its own IP, made `production` with `credits` on the balance. */
export const paidAccounts = async (
  baseUrl: string,
  admin: Admin,
  count: number,
  credits: number,
  group = 77
): Promise<Array<BenchAccount>> =>
  pool(
    Array.from({ length: count }, (_, i) => ipOf(group, i)),
    8,
    async (ip) => {
      const account = await mint(baseUrl, ip)
      await admin.production(account.accountId, credits)
      return account
    }
  )
