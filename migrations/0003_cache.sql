-- Upstream copies shared by every instance, and domains verified against a company's website.
CREATE TABLE cache_entries (
  cache_key text PRIMARY KEY,
  body text NOT NULL,
  fetched_at bigint NOT NULL
);
CREATE INDEX cache_entries_age ON cache_entries (fetched_at);

CREATE TABLE resolved_domains (
  domain text PRIMARY KEY,
  company_slug text NOT NULL,
  resolved_at bigint NOT NULL
);
