set local lock_timeout = '5s';

-- Portal links (docs/webhooks.md, "Portal links"): a short-lived, single-use code a platform hands its own customer,
-- which the console page exchanges for a session of the company limited to its webhook endpoints. Only the code's
-- SHA-256 is kept: it is 256 random bits, so a fast hash is enough, and whoever reads this table cannot open a portal.
--
-- `session_id` is the session the code was exchanged for (a row of `sessions`, user_id null): revoking the link ends
-- it. No foreign key to it: sessions are pruned a day after they expire, and the link's row goes on its own schedule.
-- `session_expires_at` is written with it, so the console page can tell by this row alone whether the link may still
-- be framed by its origins.
create table portal_links (
  id uuid primary key,
  company_id uuid not null references companies (id),
  code_hash bytea not null,
  allowed_origins text[] not null default '{}',
  expires_at timestamptz not null,
  session_seconds bigint not null check (session_seconds > 0),
  used_at timestamptz,
  session_id uuid,
  session_expires_at timestamptz,
  revoked_at timestamptz,
  inserted_at timestamptz not null default now()
);

create unique index portal_links_code_hash_idx on portal_links (code_hash);
create index portal_links_company_idx on portal_links (company_id, id);
create index portal_links_expires_at_idx on portal_links (expires_at);
