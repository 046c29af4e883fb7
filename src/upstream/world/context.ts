import { defaultHosts, type Hosts } from "../../domain/identifiers/hosts.ts"
import { affine, feistel, type Perm } from "./ids.ts"
import { hash2, hashString } from "./random.ts"
import { SIZES, SLOTS_PER_COMMUNITY, TOPICS } from "./sizes.ts"
import { COMPANY_KINDS, COMPANY_STEMS } from "./words.ts"
import { COMMUNITY_STYLES, USER_ADJ, USER_NOUN } from "./words-text.ts"

const KINDS = [
  "person",
  "company",
  "ppost",
  "community",
  "fpost",
  "comment",
  "fuser",
  "account",
  "tweet",
  "reply",
  "search"
] as const
type Kind = (typeof KINDS)[number]

/** Lazily built compact tables; each is bounded and documented where it is built. */
export interface Caches {
  companyCumWeights?: Float64Array
  companyNames?: ReadonlyArray<{
    readonly name: string
    readonly slug: string
    readonly domain: string
    readonly tokens: ReadonlyArray<string>
  }>
  accountsByTopic?: ReadonlyMap<string, ReadonlyArray<number>>
}

export interface Ctx {
  readonly seed: string
  /** The hosts of every URL the world generates and resolves. */
  readonly hosts: Hosts
  readonly seedKey: number
  readonly k: Readonly<Record<Kind, number>>
  readonly perm: {
    readonly personSlug: Perm
    readonly personUrn: Perm
    readonly personReserve: Perm
    readonly companyPair: Perm
    readonly companyNumeric: Perm
    readonly ppostKey: Perm
    readonly communityPair: Perm
    readonly communityId: Perm
    readonly fpostId: Perm
    readonly commentId: Perm
    readonly fuserName: Perm
    readonly fuserId: Perm
    readonly slots: Perm
    readonly accountHandle: Perm
    readonly accountId: Perm
    readonly tweetKey: Perm
  }
  readonly cache: Caches
}

export const makeCtx = (seed: string | number, hosts: Hosts = defaultHosts): Ctx => {
  const s = String(seed)
  const seedKey = hashString("world:" + s)
  const k = Object.fromEntries(KINDS.map((kind) => [kind, hash2(seedKey, hashString(kind))])) as Record<
    Kind,
    number
  >
  const p = (name: string): number => hash2(seedKey, hashString("perm:" + name))
  return {
    seed: s,
    hosts,
    seedKey,
    k,
    perm: {
      personSlug: feistel(32, p("personSlug")),
      personUrn: feistel(32, p("personUrn")),
      personReserve: affine(SIZES.people, p("personReserve")),
      companyPair: affine(COMPANY_STEMS.length * COMPANY_KINDS.length, p("companyPair")),
      companyNumeric: feistel(26, p("companyNumeric")),
      ppostKey: feistel(32, p("ppostKey")),
      communityPair: affine(TOPICS.length * (COMMUNITY_STYLES.length - 1), p("communityPair")),
      communityId: feistel(24, p("communityId")),
      fpostId: feistel(24, p("fpostId")),
      commentId: feistel(36, p("commentId")),
      fuserName: affine(USER_ADJ.length * USER_NOUN.length * 10_000, p("fuserName")),
      fuserId: feistel(28, p("fuserId")),
      slots: affine(SIZES.communities * SLOTS_PER_COMMUNITY, p("slots")),
      accountHandle: affine(100_000, p("accountHandle")),
      accountId: feistel(32, p("accountId")),
      tweetKey: feistel(32, p("tweetKey"))
    },
    cache: {}
  }
}
