/** Embedded vocabularies for forum and microblog text. */

const words = (s: string): ReadonlyArray<string> => s.trim().split(/\s+/)

export interface TopicGroup {
  readonly topics: ReadonlyArray<string>
  readonly nouns: ReadonlyArray<string>
}

/** Topics drive community names, post titles and tweets; search finds text through them. */
export const TOPIC_GROUPS: ReadonlyArray<TopicGroup> = [
  {
    topics: words(
      "python rust golang typescript javascript kotlin swift haskell elixir linux kubernetes docker"
    ),
    nouns: words("library compiler build deploy bug api framework codebase refactor benchmark release plugin")
  },
  {
    topics: words("webdev frontend backend devops databases postgres sqlite selfhosted homelab networking"),
    nouns: words("server cluster backup router config migration query schema dashboard uptime proxy stack")
  },
  {
    topics: words("cooking baking sourdough coffee tea grilling vegan fermentation cocktails"),
    nouns: words("recipe loaf starter knife pan sauce roast grinder brew oven marinade dough")
  },
  {
    topics: words("gardening houseplants woodworking knitting pottery painting photography drawing"),
    nouns: words("project workbench glaze lens print garden soil pot canvas sketch chisel yarn")
  },
  {
    topics: words("running cycling climbing hiking yoga swimming weightlifting marathon triathlon"),
    nouns: words("routine workout shoes injury pace trail bike race plan gear stretch record")
  },
  {
    topics: words("investing stocks crypto budgeting realestate retirement frugal personalfinance"),
    nouns: words("portfolio budget mortgage dividend index fund strategy account savings loan tax market")
  },
  {
    topics: words("movies books anime music podcasts television vinyl comics scifi fantasy"),
    nouns: words("series album episode novel soundtrack trailer season chapter playlist review author finale")
  },
  {
    topics: words("gaming minecraft chess speedrunning boardgames retrogaming esports"),
    nouns: words(
      "build opening strategy tournament console controller mod speedrun deck campaign patch ladder"
    )
  },
  {
    topics: words("space astronomy physics biology chemistry climate science history"),
    nouns: words(
      "telescope experiment paper theory launch rover discovery dataset model study eclipse archive"
    )
  },
  {
    topics: words("travel backpacking vanlife parenting dogs cats aquariums careers startups"),
    nouns: words("trip itinerary van toddler puppy kitten tank interview resume pitch visa hostel")
  }
]

export const ADJECTIVES = words(`
quick quiet bright huge tiny weird solid clean messy cheap fancy broken stable fresh vintage modern
simple subtle bold strange decent underrated overrated honest lazy brave clever gentle wild calm rough`)

export const GENERIC_NOUNS = words(`
question advice setup mistake update tip guide progress problem idea opinion experience result
beginner weekend thread journey lesson milestone upgrade alternative comparison`)

export const VERBS = words(`
learn improve fix start organize automate debug optimize plan choose compare switch measure
share finish build test rethink simplify scale`)

/** Username halves: forum usernames are adjective + noun + four digits. */
export const USER_ADJ = words(`
amber brisk calm dapper eager fancy gentle happy icy jolly keen lucky mellow nimble odd proud quirky
rapid shy tidy upbeat vivid witty young zesty bold clever dizzy fuzzy grumpy hollow jumpy kind lively
merry noisy plucky rusty salty sunny tame useful vast wary zany cosmic crispy dusty frosty glossy
humble misty polite rustic sleepy snowy spicy stormy wobbly`)

export const USER_NOUN = words(`
otter badger falcon panda walrus heron lynx moose koala gecko ferret bison raven squid pelican
marmot beaver toucan narwhal wombat sparrow hamster turtle puffin llama yak cobra mantis bat crab
tofu waffle pickle muffin noodle biscuit pretzel taco bagel dumpling pancake nugget cactus acorn
comet pebble meteor teapot lantern kettle anchor compass button rocket pixel banjo tuba kazoo`)

/** Community name styles: `{t}` is the topic; `{T}` the capitalised topic. */
export const COMMUNITY_STYLES: ReadonlyArray<readonly [name: string, title: string]> = [
  ["{t}", "{T}"],
  ["learn{t}", "Learn {T}"],
  ["{t}help", "{T} Help"],
  ["{t}jobs", "{T} Jobs"],
  ["{t}memes", "{T} Memes"],
  ["{t}news", "{T} News"],
  ["Ask{T}", "Ask {T}"],
  ["{t}_irl", "{T} IRL"],
  ["{t}circlejerk", "{T} Circlejerk"],
  ["{t}beginners", "{T} for Beginners"],
  ["{t}discussion", "{T} Discussion"],
  ["{t}pics", "{T} Pictures"],
  ["{t}deals", "{T} Deals"],
  ["{t}advice", "{T} Advice"],
  ["{t}uk", "{T} UK"],
  ["{t}canada", "{T} Canada"],
  ["{t}india", "{T} India"],
  ["{t}europe", "{T} Europe"],
  ["{t}dev", "{T} Developers"],
  ["{t}community", "The {T} Community"],
  ["{t}hq", "{T} HQ"],
  ["true{t}", "True {T}"],
  ["{t}setups", "{T} Setups"],
  ["Daily{T}", "Daily {T}"]
]

export const COMMUNITY_RULES: ReadonlyArray<readonly [string, string]> = [
  ["Be civil", "Personal attacks, slurs and harassment are removed and may lead to a ban."],
  ["Stay on topic", "Posts must be about the community's subject."],
  ["No spam or self-promotion", "Limit links to your own content to one in ten posts."],
  ["Search before posting", "Frequently asked questions are answered in the wiki."],
  ["Use descriptive titles", "Titles must describe the content; no clickbait."],
  ["No low-effort posts", "Memes and screenshots belong in the weekly thread."],
  ["Flair your posts", "Unflaired posts are removed after an hour."],
  ["No personal information", "Do not post anyone's private details."],
  ["No reposts", "Content posted in the last 30 days will be removed."],
  ["Follow the platform rules", "Sitewide rules apply here too."]
]

export const STOPWORDS = new Set(
  words(`a an the and or of to in on for with at by from is are was be it this that my your i me we you
how what why when which who do does can vs`)
)

export const LANG_PHRASES: Readonly<Record<string, ReadonlyArray<string>>> = {
  es: [
    "Hoy aprendí algo nuevo sobre",
    "No puedo creer lo bueno que es",
    "Alguien más está probando",
    "Qué opinan de"
  ],
  de: [
    "Heute habe ich etwas Neues gelernt über",
    "Wer kennt sich aus mit",
    "Endlich fertig mit",
    "Was haltet ihr von"
  ],
  fr: [
    "Aujourd'hui j'ai appris quelque chose sur",
    "Qui utilise encore",
    "Enfin terminé avec",
    "Vos avis sur"
  ],
  pt: ["Hoje aprendi algo novo sobre", "Alguém mais usando", "Finalmente terminei com", "O que acham de"]
}
