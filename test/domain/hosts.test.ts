import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  defaultHosts,
  type ForumTarget,
  forumUrlOf,
  type Hosts,
  isHostName,
  type MicroblogTarget,
  microblogUrlOf,
  type Parsed,
  parseCommunity,
  parseCompany,
  parseForumPostId,
  parseForumUrl,
  parseForumUser,
  parseMicroblogAccount,
  parseMicroblogUrl,
  parsePerson,
  parsePostsOwner,
  parseProfnetUrl,
  parseTweetId,
  rehost,
  rehostJson
} from "../../src/domain/identifiers/index.ts"

const value = <A>(parsed: Parsed<A>): A => {
  if (!parsed.ok) throw new Error(`expected a value, got: ${parsed.message}`)
  return parsed.value
}
const message = <A>(parsed: Parsed<A>): string => {
  if (parsed.ok) throw new Error(`expected a failure, got ${JSON.stringify(parsed.value)}`)
  return parsed.message
}

const other: Hosts = { profnet: "pro.example", forum: "board.example.org", microblog: "chirp.test" }

describe("host names", () => {
  it("isHostName takes bare lower-case host names only", () => {
    for (const host of [
      ...Object.values(defaultHosts),
      ...Object.values(other),
      "a-b.c9.io",
      "xn--bcher-kva.ch"
    ]) {
      assert.isTrue(isHostName(host), host)
    }
    for (const host of [
      "",
      "Profnet.com",
      "https://profnet.com",
      "profnet.com/",
      "profnet.com:443",
      "profnet.com.",
      "www.profnet.com",
      "m.forum.com",
      "localhost",
      "-forum.com",
      "forum-.com",
      "forum..com",
      "forum.c0m",
      "for um.com",
      "127.0.0.1"
    ]) {
      assert.isFalse(isHostName(host), host)
    }
  })

  it("rehost rewrites whole default host names, once, and nothing with the default hosts", () => {
    const text =
      "A profnet.com URL, www.forum.com/c/x, m.microblog.com/a/status/1; not myforum.com, forum.com.au or forum.community."
    assert.strictEqual(rehost(defaultHosts)(text), text)
    assert.strictEqual(
      rehost(other)(text),
      "A pro.example URL, www.board.example.org/c/x, m.chirp.test/a/status/1; not myforum.com, forum.com.au or forum.community."
    )
    // Swapped hosts: a replacement is never itself replaced.
    const swapped = { ...defaultHosts, profnet: "forum.com", forum: "profnet.com" }
    assert.strictEqual(rehost(swapped)("profnet.com then forum.com."), "forum.com then profnet.com.")
    assert.deepStrictEqual(
      rehostJson(other, {
        description: "A forum.com URL.",
        items: [{ example: "https://microblog.com/x" }],
        n: 1
      }),
      { description: "A board.example.org URL.", items: [{ example: "https://chirp.test/x" }], n: 1 }
    )
  })
})

describe("identifiers on configured hosts", () => {
  it("every parser reads URLs of the configured host, and refuses the default one naming the configured", () => {
    assert.deepStrictEqual(value(parseProfnetUrl("https://www.pro.example/in/Jane-Doe/?trk=x", other)), {
      type: "person",
      slug: "jane-doe"
    })
    assert.deepStrictEqual(value(parsePerson("pro.example/in/jane-doe", other)), { slug: "jane-doe" })
    assert.deepStrictEqual(value(parseCompany("https://m.pro.example/company/Acme/", other)), {
      slug: "acme"
    })
    assert.deepStrictEqual(value(parsePostsOwner("pro.example/company/acme", other)), {
      kind: "company",
      ref: { slug: "acme" }
    })
    assert.strictEqual(value(parseCommunity("board.example.org/c/Python", other)), "python")
    assert.strictEqual(
      value(parseForumUser("https://www.board.example.org/user/Someone_1/", other)),
      "someone_1"
    )
    assert.strictEqual(value(parseForumPostId("board.example.org/comments/15u0ov/", other)), "15u0ov")
    assert.deepStrictEqual(value(parseMicroblogAccount("chirp.test/Someone", other)), { handle: "someone" })
    assert.strictEqual(
      value(parseTweetId("https://chirp.test/a/status/2167472627343364032", other)),
      "2167472627343364032"
    )

    assert.match(message(parseProfnetUrl("https://profnet.com/in/jane", other)), /Not a pro\.example URL/)
    assert.match(message(parsePerson("https://www.profnet.com/in/jane", other)), /Not a pro\.example URL/)
    assert.match(message(parseForumUrl("https://forum.com/c/python", other)), /Not a board\.example\.org URL/)
    assert.match(message(parseCommunity("forum.com/c/python", other)), /Not a board\.example\.org URL/)
    assert.match(message(parseMicroblogUrl("https://microblog.com/someone", other)), /Not a chirp\.test URL/)
    assert.match(message(parseTweetId("https://microblog.com/a/status/1", other)), /Not a chirp\.test URL/)
    assert.match(message(parseTweetId("abc", other)), /chirp\.test\/<handle>\/status\/<id>/)
    // One platform's configured host is not another's.
    assert.match(
      message(parseForumUrl("https://chirp.test/c/python", other)),
      /Not a board\.example\.org URL/
    )
  })

  it("canonical URLs are on the configured hosts", () => {
    assert.strictEqual(
      forumUrlOf({ type: "community", name: "python" }, other),
      "https://board.example.org/c/python/"
    )
    assert.strictEqual(
      microblogUrlOf({ type: "profile", handle: "someone" }, other),
      "https://chirp.test/someone"
    )
    assert.strictEqual(
      microblogUrlOf({ type: "tweet", id: "12" }, other),
      "https://chirp.test/i/web/status/12"
    )
  })

  /** Three different host names, none a default (so the default hosts are foreign to them). */
  const hostsArbitrary = fc
    .tuple(fc.domain(), fc.domain(), fc.domain())
    .map(([profnet, forum, microblog]) => ({ profnet, forum, microblog }))
    .filter(
      (hosts) =>
        Object.values(hosts).every(
          (host) => isHostName(host) && !Object.values(defaultHosts).includes(host)
        ) && new Set(Object.values(hosts)).size === 3
    )
  const forumTarget: fc.Arbitrary<ForumTarget> = fc.oneof(
    fc.stringMatching(/^[a-z0-9_]{2,64}$/).map((name) => ({ type: "community" as const, name })),
    fc.stringMatching(/^[a-z0-9_-]{3,32}$/).map((username) => ({ type: "user" as const, username })),
    fc.stringMatching(/^[a-z0-9]{1,12}$/).map((id) => ({ type: "post" as const, id })),
    fc
      .tuple(
        fc.stringMatching(/^[a-z0-9_]{2,64}$/),
        fc.stringMatching(/^[a-z0-9]{1,12}$/),
        fc.stringMatching(/^[a-z0-9]{1,12}$/)
      )
      .map(([community, postId, commentId]) => ({ type: "comment" as const, community, postId, commentId }))
  )
  const microblogTarget: fc.Arbitrary<MicroblogTarget> = fc.oneof(
    // `h_` keeps clear of the pages (`i`, `home`, `explore`, ...) that are not handles.
    fc.stringMatching(/^h_[a-z0-9_]{0,13}$/).map((handle) => ({ type: "profile" as const, handle })),
    fc.stringMatching(/^[0-9]{1,25}$/).map((id) => ({ type: "tweet" as const, id }))
  )
  /** What a caller may paste instead of the canonical URL: www/m, no scheme, tracking parameters. */
  const pasted = (url: string, variant: number) => {
    const { host, pathname } = new URL(url)
    return [url, `http://www.${host}${pathname}?utm_source=x`, `m.${host}${pathname}`][variant % 3]!
  }

  it("forum and microblog canonical URLs parse back on any hosts, and never on the default ones", () => {
    fc.assert(
      fc.property(
        hostsArbitrary,
        forumTarget,
        microblogTarget,
        fc.nat(),
        (hosts, forum, microblog, variant) => {
          assert.deepStrictEqual(
            value(parseForumUrl(pasted(forumUrlOf(forum, hosts), variant), hosts)),
            forum
          )
          assert.deepStrictEqual(
            value(parseMicroblogUrl(pasted(microblogUrlOf(microblog, hosts), variant), hosts)),
            microblog
          )
          assert.include(
            message(parseForumUrl(forumUrlOf(forum, defaultHosts), hosts)),
            `Not a ${hosts.forum} URL`
          )
          assert.include(
            message(parseMicroblogUrl(microblogUrlOf(microblog, defaultHosts), hosts)),
            `Not a ${hosts.microblog} URL`
          )
        }
      )
    )
  })

  it("profnet person and company URLs parse on any hosts, and the default host is refused", () => {
    fc.assert(
      fc.property(
        hostsArbitrary,
        fc.constantFrom("in", "company"),
        fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,40}$/),
        fc.nat(),
        (hosts, kind, slug, variant) => {
          const url = pasted(`https://${hosts.profnet}/${kind}/${slug}/`, variant)
          const type = kind === "in" ? "person" : "company"
          assert.deepStrictEqual(value(parseProfnetUrl(url, hosts)), { type, slug })
          assert.deepStrictEqual(value(parsePostsOwner(url, hosts)), { kind: type, ref: { slug } })
          assert.include(
            message(parseProfnetUrl(`https://${defaultHosts.profnet}/${kind}/${slug}/`, hosts)),
            `Not a ${hosts.profnet} URL`
          )
        }
      )
    )
  })
})
