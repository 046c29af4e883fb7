import type { Rng } from "./random.ts"
import { TOPIC_GROUP_OF, TOPIC_INDEX } from "./sizes.ts"
import { capitalize, fill, tokenize } from "./text.ts"
import { ADJECTIVES, GENERIC_NOUNS, LANG_PHRASES, TOPIC_GROUPS, VERBS } from "./words-text.ts"

/** Forum and microblog prose: template sentences over the topic vocabulary, so search can find them. */

const TITLES = [
  "What's the best way to {verb} my {topic} {noun}?",
  "{Topic} {noun} finally working after {n} weeks",
  "Is {topic} still worth it in 2026?",
  "My {adj} {topic} {noun}, one year later",
  "PSA: the new {topic} {noun} is {adj}",
  "Help: {topic} {noun} keeps breaking",
  "I made a {adj} {noun} for {topic} people",
  "Weekly {topic} {gnoun} thread",
  "Unpopular opinion: {topic} {noun} advice is {adj}",
  "Beginner {gnoun} about my first {noun}",
  "{n} years of {topic}: what I learned",
  "How do you {verb} a {noun} without losing your mind?",
  "Switched from {other} to {topic}. AMA",
  "Any {adj} {noun} recommendations?",
  "{Topic} vs {other} for a {adj} {noun}?",
  "Rate my {topic} {noun}"
]

const SENTENCES = [
  "I have been into {topic} for about {n} years now.",
  "My {noun} was {adj} until I tried to {verb} it.",
  "Has anyone else had this {gnoun} with their {noun}?",
  "I read the wiki but the {noun} part is still {adj} to me.",
  "Budget is around {n}00, so nothing too {adj}.",
  "Any {gnoun} is welcome, thanks in advance!",
  "Edit: solved, it was the {noun} all along.",
  "Compared to {other}, {topic} feels {adj}."
]

const COMMENTS = [
  "This is {adj}. I had the same {gnoun} with my {noun}.",
  "Have you tried to {verb} the {noun} first?",
  "Came here to say this.",
  "{Topic} has changed a lot in the last {n} years.",
  "Honestly {other} handles this better.",
  "Saving this thread, great {gnoun}.",
  "Same here, my {noun} did exactly that.",
  "Check the pinned post, the {noun} section covers it.",
  "Underrated comment. The {noun} is the key.",
  "I {verb} my {noun} every week and never had this problem.",
  "Source? That sounds {adj}.",
  "Thanks, this fixed my {topic} {noun}!"
]

const TWEETS = [
  "Just shipped a {adj} {noun} with {topic}. Feels good. #{topic}",
  "Hot take: every {topic} {noun} is {adj}.",
  "Day {n} of learning {topic}: today I tried to {verb} my {noun}.",
  "Anyone else think {topic} is getting {adj}? #{topic}",
  "{Topic} thread: {n} things I wish I knew about my {noun}",
  "Reminder that {other} and {topic} can coexist.",
  "New blog post on my {topic} {noun} setup is up",
  "The {adj} part of {topic} nobody talks about: the {noun}.",
  "Weekend plans: {topic}, coffee, and a {adj} {noun}.",
  "Can't believe how {adj} this {topic} {noun} turned out"
]

const OTHERS: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  TOPIC_GROUPS.flatMap((g) => g.topics.map((t) => [t, g.topics.filter((x) => x !== t)] as const))
)

const CAPITALIZED: ReadonlyMap<string, string> = new Map(
  TOPIC_GROUPS.flatMap((g) => g.topics.map((t) => [t, capitalize(t)] as const))
)

/** Slot values for one piece of text; `topic` is drawn from `topics` (primary first). */
const slots = (rng: Rng, topics: ReadonlyArray<string>): Record<string, string> => {
  const primary = topics[0] ?? "life"
  const topic = rng.chance(0.75) ? primary : rng.pick(topics.length > 0 ? topics : [primary])
  const group = TOPIC_GROUPS[TOPIC_GROUP_OF[TOPIC_INDEX.get(primary) ?? 0]!]!
  const other = OTHERS.get(topic) ?? []
  return {
    topic,
    Topic: CAPITALIZED.get(topic) ?? capitalize(topic),
    other: other.length > 0 ? rng.pick(other) : "everything else",
    noun: rng.pick(group.nouns),
    gnoun: rng.pick(GENERIC_NOUNS),
    adj: rng.pick(ADJECTIVES),
    verb: rng.pick(VERBS),
    n: String(rng.range(2, 12))
  }
}

const article = (s: string): string => s.replace(/\b([Aa]) ([aeiou])/g, "$1n $2")

/**
 * A template with the words it always contributes, so a search can test a drawn text against
 * its terms without building the string. `exact` is false when a slot touches letters or digits
 * (as in "{n}00"), where only the rendered text tells the tokens.
 */
interface Compiled {
  readonly template: string
  readonly words: ReadonlySet<string>
  readonly slots: ReadonlyArray<string>
  readonly exact: boolean
}

const compile = (template: string): Compiled => ({
  template,
  words: new Set(tokenize(template.replace(/\{\w+\}/g, " "))),
  slots: [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!),
  exact: !/[A-Za-z0-9]\{|\}[A-Za-z0-9]/.test(template)
})

const TITLES_C = TITLES.map(compile)
const SENTENCES_C = SENTENCES.map(compile)
const COMMENTS_C = COMMENTS.map(compile)
const TWEETS_C = TWEETS.map(compile)
const LANG_C: Readonly<Record<string, ReadonlyArray<Compiled>>> = Object.fromEntries(
  Object.entries(LANG_PHRASES).map(([lang, ps]) => [lang, ps.map((p) => compile(`${p} {topic} #{topic}`))])
)

/** The drawn template and slot values of one sentence; rendering and matching share the draw. */
export interface Piece {
  readonly t: Compiled
  readonly s: Readonly<Record<string, string>>
}

export const render = (pieces: ReadonlyArray<Piece>): string =>
  article(pieces.map((p) => fill(p.t.template, p.s)).join(" "))

const slotHas = (value: string, token: string): boolean =>
  value.toLowerCase() === token || (value.includes(" ") && tokenize(value).includes(token))

/** Every term occurs in the rendered text (terms are lower-case, as queryTokens gives them). */
export const piecesHave = (pieces: ReadonlyArray<Piece>, tokens: ReadonlyArray<string>): boolean => {
  if (!pieces.every((p) => p.t.exact)) {
    const words = tokenize(render(pieces))
    return tokens.every((t) => words.includes(t))
  }
  return tokens.every((t) =>
    pieces.some((p) => p.t.words.has(t) || p.t.slots.some((k) => slotHas(p.s[k]!, t)))
  )
}

export const titlePieces = (rng: Rng, topics: ReadonlyArray<string>): Array<Piece> => [
  { t: rng.pick(TITLES_C), s: slots(rng, topics) }
]

export const forumTitle = (rng: Rng, topics: ReadonlyArray<string>): string =>
  render(titlePieces(rng, topics))

export const forumBody = (rng: Rng, topics: ReadonlyArray<string>): string =>
  render(rng.sample(SENTENCES_C, rng.range(2, 4)).map((t) => ({ t, s: slots(rng, topics) })))

export const commentPieces = (rng: Rng, topics: ReadonlyArray<string>): Array<Piece> => {
  const first = { t: rng.pick(COMMENTS_C), s: slots(rng, topics) }
  return rng.chance(0.3) ? [first, { t: rng.pick(SENTENCES_C), s: slots(rng, topics) }] : [first]
}

export const forumComment = (rng: Rng, topics: ReadonlyArray<string>): string =>
  render(commentPieces(rng, topics))

export const tweetPieces = (rng: Rng, topics: ReadonlyArray<string>, lang: string): Array<Piece> => {
  const s = slots(rng, topics)
  return [{ t: rng.pick(LANG_C[lang] ?? TWEETS_C), s }]
}

/**
 * Every word generated text can contain (besides @handles). A query term outside it matches
 * nothing, which searches use to answer at once instead of scanning their whole budget.
 */
export const VOCABULARY: ReadonlySet<string> = new Set([
  ...[...TITLES, ...SENTENCES, ...COMMENTS, ...TWEETS, ...Object.values(LANG_PHRASES).flat()].flatMap((t) =>
    tokenize(t.replace(/\{\w+\}/g, " "))
  ),
  ...TOPIC_GROUPS.flatMap((g) => [...g.topics, ...g.nouns]),
  ...[ADJECTIVES, GENERIC_NOUNS, VERBS].flat(),
  ...["an", "rt", "everything", "else", "life", "s", "00"],
  ...Array.from({ length: 13 }, (_, n) => String(n)),
  ...Array.from({ length: 13 }, (_, n) => `${n}00`)
])
