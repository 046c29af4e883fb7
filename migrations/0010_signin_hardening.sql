-- Sign-in hardening: a stranger can neither brute-force a sign-in code nor lock its owner out, and
-- the one-time grant is once per mailbox.

-- The client that started a sign-in (its per-IP key: an IPv4 address or an IPv6 network). A new
-- start replaces only that client's live code for the email, never another client's; that client's
-- own wrong tries do not count against the code's total. `attempts` now counts the wrong tries of
-- every other client. Sign-ins started before this migration have none and count as anyone's.
ALTER TABLE sign_ins ADD COLUMN start_ip text;

-- Wrong tries at one sign-in's code from one client: past the per-client allowance the code stops
-- taking that client's tries, and stays usable for the others.
CREATE TABLE sign_in_attempts (
  sign_in_id text NOT NULL REFERENCES sign_ins (id) ON DELETE CASCADE,
  ip text NOT NULL,
  wrong integer NOT NULL,
  PRIMARY KEY (sign_in_id, ip)
);

-- The one-time grant is once per mailbox (`mailboxOf` in src/domain/identity.ts: no `+tag`, and no
-- dots at gmail.com and googlemail.com, one domain), not once per spelling of it. The grants given
-- before this migration are converted once, here, by the same rule written in SQL; when several old
-- grants share a mailbox, the first keeps it and the others stay without one.
ALTER TABLE grants ADD COLUMN mailbox text;

UPDATE grants SET mailbox = firsts.mailbox
FROM (
  SELECT DISTINCT ON (mailbox) key_id, mailbox
  FROM (
    SELECT key_id, created_at,
      CASE WHEN split_part(email, '@', 2) IN ('gmail.com', 'googlemail.com')
        THEN replace(split_part(split_part(email, '@', 1), '+', 1), '.', '') || '@gmail.com'
        ELSE split_part(split_part(email, '@', 1), '+', 1) || '@' || split_part(email, '@', 2)
      END AS mailbox
    FROM grants
  ) AS converted
  ORDER BY mailbox, created_at, key_id
) AS firsts
WHERE grants.key_id = firsts.key_id;

CREATE UNIQUE INDEX grants_mailbox ON grants (mailbox);
