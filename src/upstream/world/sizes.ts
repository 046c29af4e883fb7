import { TOPIC_GROUPS } from "./words-text.ts"

/** The world's dimensions and topic tables: the constants every table is built from. */
export const SIZES = {
  people: 120_000,
  companies: 5_000,
  communities: 2_000,
  forumUsers: 100_000,
  microblogAccounts: 20_000
} as const

/** Poster slots per community; communities x slots = 4 x forum users, so each user holds 4 slots. */
export const SLOTS_PER_COMMUNITY = 200
export const SLOTS_PER_USER = (SIZES.communities * SLOTS_PER_COMMUNITY) / SIZES.forumUsers

export const TOPICS: ReadonlyArray<string> = TOPIC_GROUPS.flatMap((g) => g.topics)
export const TOPIC_GROUP_OF: ReadonlyArray<number> = TOPIC_GROUPS.flatMap((g, gi) => g.topics.map(() => gi))
export const TOPIC_INDEX: ReadonlyMap<string, number> = new Map(TOPICS.map((t, i) => [t, i]))
