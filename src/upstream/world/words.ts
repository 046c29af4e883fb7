/** Embedded vocabularies for the professional network. Kept as packed strings to stay compact. */

const words = (s: string): ReadonlyArray<string> => s.trim().split(/\s+/)
const phrases = (s: string): ReadonlyArray<string> =>
  s
    .split("|")
    .map((x) => x.trim())
    .filter((x) => x.length > 0)

export const FIRST_NAMES = words(`
James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William Barbara Richard Susan
Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy Matthew Betty Anthony Sandra
Mark Margaret Donald Ashley Steven Kimberly Andrew Emily Paul Donna Joshua Michelle Kenneth Carol Kevin
Amanda Brian Melissa George Deborah Timothy Stephanie Ronald Rebecca Jason Laura Edward Sharon Jeffrey
Cynthia Ryan Kathleen Jacob Amy Gary Angela Nicholas Shirley Eric Anna Jonathan Brenda Stephen Pamela
Larry Emma Justin Nicole Scott Helen Brandon Samantha Benjamin Katherine Samuel Christine Gregory Rachel
Patrick Carolyn Frank Janet Raymond Maria Jack Olivia Dennis Heather Tyler Julie Aaron Victoria Adam Ruth
Nathan Lauren Priya Arjun Wei Mei Hiroshi Yuki Carlos Sofia Mohammed Fatima Lucas Ana Mateo Lina Omar
Aisha Noah Chloe Liam Zoe Ethan Ava Ravi Ines Jonas Elena Luca Nina`)

export const LAST_NAMES = words(`
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson
Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis
Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall
Rivera Campbell Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes
Stewart Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard
Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price
Alvarez Castillo Sanders Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell
Coleman Butler Henderson Barnes Fischer Schmidt Muller Rossi Bianchi Dubois Moreau Tanaka Sato Suzuki
Chen Wang Li Zhang Singh Kumar Sharma Okafor Mensah Novak Kowalski Larsen Berg Silva Santos Costa`)

/** A leading "!" marks a role that takes no seniority prefix. */
export const ROLES = phrases(`
Software Engineer|Data Scientist|Data Engineer|Product Manager|Product Designer|UX Researcher|
Engineering Manager|DevOps Engineer|Site Reliability Engineer|Machine Learning Engineer|Frontend Engineer|
Backend Engineer|Account Executive|Sales Manager|Marketing Manager|Content Strategist|Recruiter|
Talent Acquisition Partner|HR Business Partner|Financial Analyst|Accountant|Operations Manager|
Project Manager|Business Analyst|Consultant|Customer Success Manager|Solutions Architect|Security Engineer|
QA Engineer|Research Scientist|Supply Chain Analyst|Legal Counsel|Graphic Designer|Communications Manager|
Brand Manager|Mobile Engineer|Cloud Architect|!Founder & CEO|!Chief Technology Officer|
!Vice President of Sales|!Director of Engineering|!Head of Marketing|!Chief Financial Officer`)

export const SENIORITY = [
  "",
  "",
  "",
  "",
  "Senior",
  "Senior",
  "Lead",
  "Principal",
  "Staff",
  "Junior",
  "Associate"
]

export const CITIES = phrases(`
San Francisco, California, United States|New York, New York, United States|Seattle, Washington, United States|
Austin, Texas, United States|Boston, Massachusetts, United States|Chicago, Illinois, United States|
Los Angeles, California, United States|Denver, Colorado, United States|Atlanta, Georgia, United States|
Miami, Florida, United States|Toronto, Ontario, Canada|Vancouver, British Columbia, Canada|
London, England, United Kingdom|Manchester, England, United Kingdom|Dublin, County Dublin, Ireland|
Berlin, Berlin, Germany|Munich, Bavaria, Germany|Paris, Ile-de-France, France|Amsterdam, North Holland, Netherlands|
Stockholm, Stockholm County, Sweden|Copenhagen, Capital Region, Denmark|Zurich, Zurich, Switzerland|
Madrid, Community of Madrid, Spain|Barcelona, Catalonia, Spain|Lisbon, Lisbon, Portugal|Milan, Lombardy, Italy|
Warsaw, Masovia, Poland|Tel Aviv, Tel Aviv District, Israel|Dubai, Dubai, United Arab Emirates|
Bengaluru, Karnataka, India|Mumbai, Maharashtra, India|Singapore, Singapore|Tokyo, Tokyo, Japan|
Sydney, New South Wales, Australia|Melbourne, Victoria, Australia|Sao Paulo, Sao Paulo, Brazil|
Mexico City, Mexico City, Mexico|Lagos, Lagos State, Nigeria|Nairobi, Nairobi County, Kenya|
Cape Town, Western Cape, South Africa`)

export const SCHOOLS = phrases(`
Stanford University|Massachusetts Institute of Technology|University of California, Berkeley|
Carnegie Mellon University|Harvard University|University of Washington|University of Michigan|
Georgia Institute of Technology|University of Texas at Austin|Cornell University|Columbia University|
New York University|University of Toronto|University of Waterloo|University of Oxford|University of Cambridge|
Imperial College London|ETH Zurich|Technical University of Munich|Sorbonne University|Delft University of Technology|
KTH Royal Institute of Technology|University of Copenhagen|Bocconi University|Indian Institute of Technology Bombay|
National University of Singapore|University of Tokyo|University of Sydney|University of Melbourne|
University of Sao Paulo|University of Cape Town|University of Lagos|Arizona State University|
Purdue University|University of Illinois Urbana-Champaign|Boston University|University of Southern California|
Northeastern University|University of Edinburgh|Trinity College Dublin`)

export const DEGREES = phrases(`
Bachelor of Science|Bachelor of Arts|Master of Science|Master of Business Administration|Doctor of Philosophy|
Bachelor of Engineering|Master of Arts`)

export const FIELDS = phrases(`
Computer Science|Economics|Business Administration|Mechanical Engineering|Psychology|Marketing|Finance|
Mathematics|Statistics|Design|Communications|Biology|Electrical Engineering|Political Science|Data Science`)

export const SKILLS = phrases(`
Python|TypeScript|JavaScript|Java|Go|Rust|SQL|React|Node.js|Kubernetes|AWS|Google Cloud|Docker|Terraform|
Machine Learning|Data Analysis|Product Strategy|Agile Methodologies|Scrum|Leadership|Public Speaking|
Negotiation|Salesforce|HubSpot|SEO|Content Marketing|Brand Strategy|Financial Modeling|Excel|Tableau|
Power BI|Project Management|Stakeholder Management|Recruiting|Employer Branding|Figma|User Research|
Accessibility|Cybersecurity|Penetration Testing|Supply Chain Management|Lean Six Sigma|Contract Law|
Copywriting|Customer Success|Business Development|Go-to-Market Strategy|Distributed Systems|
Natural Language Processing|Computer Vision|Statistics|Pricing|Operations|Change Management`)

export const INDUSTRIES = phrases(`
Software Development|IT Services and IT Consulting|Financial Services|Hospital and Health Care|
Biotechnology Research|Retail|Transportation, Logistics and Supply Chain|Renewable Energy|
Marketing Services|Education|Real Estate|Manufacturing|Food and Beverage Services|Media Production|
Insurance|Telecommunications|Computer Games|Legal Services|Human Resources Services|Aviation and Aerospace`)

/** Brand stems for company names: the first half of every company name, slug and domain. */
export const COMPANY_STEMS = words(`
apex arbor atlas aurora beacon birch blue bolt bright cedar cinder clear cloud cobalt copper coral crest
delta drift ember evergreen falcon fern firefly flint forge glacier golden granite harbor hawk helix
horizon indigo iron jade juniper keystone kinetic lantern lark ledger lumen lunar maple meridian mesa
mosaic nimbus north nova oak onyx orbit pacific pine pioneer pixel polar prairie prism quantum quartz
radiant raven redwood ridge river rocket sable sage scarlet sierra silver solstice sparrow spruce
stellar stone summit swift terra tidal timber true umber vector velvet verdant vista wave willow zenith`)

/** Second halves of company names, each with the industry it implies (index into INDUSTRIES). */
export const COMPANY_KINDS: ReadonlyArray<readonly [string, number]> = phrases(`
analytics:0|labs:0|software:0|systems:1|technologies:1|digital:1|consulting:1|capital:2|partners:2|
payments:2|finance:2|health:3|care:3|clinics:3|bio:4|therapeutics:4|genomics:4|goods:5|market:5|
outfitters:5|logistics:6|freight:6|mobility:6|energy:7|solar:7|power:7|media:8|creative:8|studio:8|
learning:9|academy:9|properties:10|homes:10|industries:11|robotics:11|manufacturing:11|foods:12|kitchen:12|
brewing:12|films:13|pictures:13|insurance:14|assurance:14|networks:15|telecom:15|games:16|interactive:16|
legal:17|law:17|talent:18|people:18|aerospace:19|aviation:19|ai:0|cloud:1|data:0|security:1|works:11|
ventures:2|group:1|collective:8|foundry:11|dynamics:11`).map((p) => {
  const [w, i] = p.split(":")
  return [w!, Number(i)] as const
})

export const TLDS = ["com", "com", "com", "com", "com", "io", "ai", "co", "net"]

export const PROFNET_HASHTAGS = words(`
leadership careers hiring innovation ai productivity startups engineering marketing sales growth
sustainability remotework management learning data product design fintech healthtech`)
