import { assert, describe, it } from "@effect/vitest"
import {
  forumUrlOf,
  defaultHosts as hosts,
  microblogUrlOf,
  type Parsed,
  parseCommunity,
  parseForumPostId,
  parseForumUrl,
  parseForumUser,
  parseMicroblogAccount,
  parseMicroblogUrl,
  parseProfnetUrl,
  parseTweetId,
  urlPath
} from "../../src/domain/identifiers/index.ts"

const value = <A>(parsed: Parsed<A>): A => {
  if (!parsed.ok) throw new Error(`expected a value, got: ${parsed.message}`)
  return parsed.value
}
const message = <A>(parsed: Parsed<A>): string => {
  if (parsed.ok) throw new Error(`expected a failure, got ${JSON.stringify(parsed.value)}`)
  return parsed.message
}

describe("forum identifiers", () => {
  it("parseForumUrl reads every URL shape, with tracking parameters, www/m hosts and no scheme", () => {
    const post =
      "https://www.forum.com/c/Python/comments/15U0OV/weekly_question/?utm_source=share&utm_medium=web"
    assert.deepStrictEqual(value(parseForumUrl(post, hosts)), { type: "post", id: "15u0ov" })
    assert.deepStrictEqual(value(parseForumUrl("forum.com/comments/15u0ov", hosts)), {
      type: "post",
      id: "15u0ov"
    })
    assert.deepStrictEqual(
      value(parseForumUrl("http://m.forum.com/c/pythonmemes/comments/18av0i/x/7pmlrf8/", hosts)),
      {
        type: "comment",
        community: "pythonmemes",
        postId: "18av0i",
        commentId: "7pmlrf8"
      }
    )
    assert.deepStrictEqual(value(parseForumUrl("https://forum.com/r/AskPython/top/?t=week", hosts)), {
      type: "community",
      name: "askpython"
    })
    assert.deepStrictEqual(value(parseForumUrl("https://forum.com/u/Sleepy-Panda-6634/", hosts)), {
      type: "user",
      username: "sleepy-panda-6634"
    })
    assert.match(message(parseForumUrl("https://example.com/c/python", hosts)), /Not a forum\.com URL/)
    assert.match(message(parseForumUrl("https://forum.com/settings", hosts)), /not a community, post/)
  })

  it("forumUrlOf gives URLs that parse back to the same target", () => {
    for (const url of [
      "https://forum.com/c/python/",
      "https://forum.com/user/grumpypanda8004/",
      "https://forum.com/c/python/comments/15u0ov/slug/",
      "https://forum.com/c/pythonmemes/comments/18av0i/slug/7pmlrf8/"
    ]) {
      const target = value(parseForumUrl(url, hosts))
      assert.deepStrictEqual(value(parseForumUrl(forumUrlOf(target, hosts), hosts)), target)
    }
  })

  it("parseCommunity takes a name, c/ or r/ prefixes or a community URL, and refuses other URLs", () => {
    for (const raw of [
      "python",
      "Python",
      "c/python",
      "/r/python/",
      "https://www.forum.com/c/Python/?utm_source=x"
    ]) {
      assert.strictEqual(value(parseCommunity(raw, hosts)), "python")
    }
    assert.match(
      message(parseCommunity("https://forum.com/c/python/comments/15u0ov/x/", hosts)),
      /points at a post/
    )
    assert.match(message(parseCommunity("https://example.com/c/python", hosts)), /Not a forum\.com URL/)
    assert.match(message(parseCommunity("two words", hosts)), /community name without the prefix/)
  })

  it("parseForumUser takes a name (case-insensitive), u/ prefixes or a profile URL", () => {
    for (const raw of [
      "GrumpyPanda8004",
      "u/GrumpyPanda8004",
      "https://m.forum.com/user/GrumpyPanda8004/?x=1"
    ]) {
      assert.strictEqual(value(parseForumUser(raw, hosts)), "grumpypanda8004")
    }
    assert.match(message(parseForumUser("https://forum.com/c/python/", hosts)), /points at a community/)
    assert.match(message(parseForumUser("no spaces allowed", hosts)), /Send a username/)
  })

  it("parseForumPostId takes ids (any case) and post or comment permalinks", () => {
    assert.strictEqual(value(parseForumPostId(" 15U0OV ", hosts)), "15u0ov")
    assert.strictEqual(
      value(parseForumPostId("https://forum.com/c/python/comments/15u0ov/x/", hosts)),
      "15u0ov"
    )
    assert.strictEqual(
      value(parseForumPostId("forum.com/c/pythonmemes/comments/18av0i/x/7pmlrf8/", hosts)),
      "18av0i"
    )
    assert.match(message(parseForumPostId("https://forum.com/c/python/", hosts)), /not a post permalink/)
    assert.match(message(parseForumPostId("not-an-id", hosts)), /base36/)
  })
})

describe("microblog identifiers", () => {
  it("parseMicroblogUrl reads profiles and status URLs, and refuses pages and other hosts", () => {
    assert.deepStrictEqual(
      value(parseMicroblogUrl("https://www.microblog.com/TheSteven52995?ref_src=x", hosts)),
      {
        type: "profile",
        handle: "thesteven52995"
      }
    )
    assert.deepStrictEqual(
      value(parseMicroblogUrl("m.microblog.com/theSteven52995/status/2167472627343364032?s=20", hosts)),
      {
        type: "tweet",
        id: "2167472627343364032"
      }
    )
    assert.deepStrictEqual(
      value(parseMicroblogUrl("https://microblog.com/i/web/status/2167472627343364032", hosts)),
      {
        type: "tweet",
        id: "2167472627343364032"
      }
    )
    assert.match(
      message(parseMicroblogUrl("https://microblog.com/explore", hosts)),
      /not a profile or status URL/
    )
    assert.match(
      message(parseMicroblogUrl("https://microblog.com/x/status/abc", hosts)),
      /not a profile or status URL/
    )
    assert.match(message(parseMicroblogUrl("https://forum.com/c/python", hosts)), /Not a microblog\.com URL/)
  })

  it("microblogUrlOf gives URLs that parse back to the same target", () => {
    for (const target of [
      { type: "profile", handle: "thesteven52995" },
      { type: "tweet", id: "2167472627343364032" }
    ] as const) {
      assert.deepStrictEqual(value(parseMicroblogUrl(microblogUrlOf(target, hosts), hosts)), target)
    }
  })

  it("parseMicroblogAccount takes a handle, @handle, profile URL or numeric id", () => {
    for (const raw of ["theSteven52995", "@theSteven52995", "https://www.microblog.com/theSteven52995/"]) {
      assert.deepStrictEqual(value(parseMicroblogAccount(raw, hosts)), { handle: "thesteven52995" })
    }
    assert.deepStrictEqual(value(parseMicroblogAccount("2512913167", hosts)), { id: "2512913167" })
    assert.match(
      message(parseMicroblogAccount("microblog.com/a/status/1", hosts)),
      /status URL; read one tweet with getTweet/
    )
    assert.match(message(parseMicroblogAccount("far too long a handle", hosts)), /Send a handle/)
  })

  it("parseTweetId takes a numeric id or a status URL", () => {
    assert.strictEqual(value(parseTweetId("2167472627343364032", hosts)), "2167472627343364032")
    assert.strictEqual(
      value(parseTweetId("https://microblog.com/a/status/2167472627343364032/photo/1", hosts)),
      "2167472627343364032"
    )
    assert.match(message(parseTweetId("https://microblog.com/theSteven52995", hosts)), /profile URL/)
    assert.match(message(parseTweetId("abc", hosts)), /numeric tweet id/)
  })
})

describe("URL identifiers and hostile percent-encoding", () => {
  it("urlPath never throws on a malformed escape and never decodes to a control character", () => {
    assert.deepStrictEqual(urlPath("https://profnet.com/in/%ZZ", hosts.profnet), ["in", "%ZZ"])
    assert.deepStrictEqual(urlPath("https://profnet.com/in/a%E0%A4%A", hosts.profnet), ["in", "a%E0%A4%A"])
    assert.deepStrictEqual(urlPath("https://profnet.com/in/a%00b", hosts.profnet), ["in", "a%00b"])
    assert.deepStrictEqual(urlPath("https://profnet.com/in/caf%C3%A9", hosts.profnet), ["in", "café"])
    assert.match(message(parseProfnetUrl("https://profnet.com/in/%ZZ", hosts)), /not a profile/)
    assert.match(message(parseForumUrl("https://forum.com/u/%00bob", hosts)), /not a community/)
    const post = value(parseProfnetUrl("https://profnet.com/posts/%00_x-activity-1234567890", hosts))
    assert.deepStrictEqual(post, { type: "post", activityId: "1234567890", authorSlug: "%00" })
  })
})
