-- Sign-in under attack (docs/production.md, "Sessions and revocation"; docs/limits.md): one key per username,
-- revocable sessions, and the counts of the limits kept where every instance sees them.

-- The username as sign-in compares it: NFKC and case folded by `usernameKey` (domain/integrators/users.ts), the one
-- function used for storage, lookup and the throttle. Postgres' lower() depends on the collation and folds some
-- letters differently (a dotted capital I), so the key is made in one place and stored. Usernames stored so far are
-- ASCII letters, digits and . _ @ + -, where lower() and the function agree.
alter table users add column username_key text;
update users set username_key = lower(username);
alter table users alter column username_key set not null;
drop index users_username_idx;
create unique index users_username_key_idx on users (username_key);
-- A disabled user cannot sign in, and its sessions end (`deno task user:disable`).
alter table users add column disabled_at timestamptz;

-- A token from sign-in names its session (`jti`): revoking the row ends the token on every instance. Deleting the
-- user deletes its sessions.
create table sessions (
  id uuid primary key,
  company_id uuid not null references companies (id),
  user_id uuid references users (id) on delete cascade,
  inserted_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user_idx on sessions (user_id) where revoked_at is null;
create index sessions_expires_at_idx on sessions (expires_at);

-- Tokens of a company issued at or before this instant are refused, whoever signed them (`deno task token:revoke`).
alter table companies add column tokens_valid_after timestamptz;

-- Every instance caches what it checked; a change that ends tokens tells them all at once. The payload is the company.
create function notify_auth_revoked() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth_revoked', coalesce(old.company_id, new.company_id)::text);
  return null;
end $$;

create trigger sessions_revoked after update of revoked_at or delete on sessions
  for each row execute function notify_auth_revoked();

create function notify_company_tokens_revoked() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth_revoked', new.id::text);
  return null;
end $$;

create trigger companies_tokens_revoked after update of tokens_valid_after on companies
  for each row when (old.tokens_valid_after is distinct from new.tokens_valid_after)
  execute function notify_company_tokens_revoked();

-- Failed sign-ins per username key and per client address within a sliding window: the instants of the newest
-- failures (at most the limit's count), so a row stays small. A failure is reserved before the password is hashed, so
-- concurrent guesses are counted; a success gives its reservation back.
create table sign_in_failures (
  scope text not null check (scope in ('username', 'address')),
  key text not null,
  times timestamptz[] not null default '{}',
  primary key (scope, key)
);

-- Reserves one failure for the username and the address, or none when either is full: returns 0 ms and the instant
-- reserved, or the milliseconds until the fuller one has room. Both rows are locked in one order (username first), so
-- concurrent attempts take turns and never deadlock.
create function reserve_sign_in(
  p_username text, p_address text, p_per_username int, p_per_address int, p_window interval
) returns table (wait_ms bigint, reserved_at timestamptz) language plpgsql as $$
declare
  now_ timestamptz;
  user_times timestamptz[];
  address_times timestamptz[];
  wait bigint := 0;
begin
  insert into sign_in_failures (scope, key) values ('username', p_username), ('address', p_address)
    on conflict do nothing;
  perform 1 from sign_in_failures
    where (scope = 'username' and key = p_username) or (scope = 'address' and key = p_address)
    order by scope desc for update;
  now_ := clock_timestamp();
  select array(select t from unnest(f.times) t where t > now_ - p_window order by t) into user_times
    from sign_in_failures f where scope = 'username' and key = p_username;
  select array(select t from unnest(f.times) t where t > now_ - p_window order by t) into address_times
    from sign_in_failures f where scope = 'address' and key = p_address;
  if cardinality(user_times) >= p_per_username then
    wait := greatest(wait, ceil(extract(epoch from
      user_times[cardinality(user_times) - p_per_username + 1] + p_window - now_) * 1000)::bigint);
  end if;
  if cardinality(address_times) >= p_per_address then
    wait := greatest(wait, ceil(extract(epoch from
      address_times[cardinality(address_times) - p_per_address + 1] + p_window - now_) * 1000)::bigint);
  end if;
  if wait > 0 then
    return query select greatest(wait, 1), null::timestamptz;
    return;
  end if;
  update sign_in_failures set times = (user_times || now_)[greatest(1, cardinality(user_times) + 2 - p_per_username):]
    where scope = 'username' and key = p_username;
  update sign_in_failures set times = (address_times || now_)[greatest(1, cardinality(address_times) + 2 - p_per_address):]
    where scope = 'address' and key = p_address;
  return query select 0::bigint, now_;
end $$;

-- Token buckets shared by every instance: `tokens` as of `at`, refilled at the caller's rate up to its burst. An
-- instance takes a few tokens at once (routes/policy/rate_limit_buckets.ts) so most requests cost no round trip.
create table rate_limit_buckets (
  scope text not null,
  key text not null,
  tokens double precision not null,
  at timestamptz not null,
  primary key (scope, key)
);

-- Takes up to p_want tokens: how many were granted, and when none, the milliseconds until one is there.
create function take_rate_tokens(
  p_scope text, p_key text, p_per_second double precision, p_burst double precision, p_want int
) returns table (granted int, wait_ms bigint) language plpgsql as $$
declare
  now_ timestamptz;
  held double precision;
  held_at timestamptz;
  available double precision;
  got int;
begin
  insert into rate_limit_buckets (scope, key, tokens, at) values (p_scope, p_key, p_burst, clock_timestamp())
    on conflict do nothing;
  select tokens, at into held, held_at from rate_limit_buckets where scope = p_scope and key = p_key for update;
  -- read after the lock: a caller that waited must not refill from an instant before the last taker's
  now_ := greatest(clock_timestamp(), held_at);
  available := least(p_burst, held + extract(epoch from now_ - held_at) * p_per_second);
  got := least(p_want, floor(available))::int;
  update rate_limit_buckets set tokens = available - got, at = now_ where scope = p_scope and key = p_key;
  return query select got, case when got > 0 then 0::bigint
    else greatest(1, ceil((1 - available) / p_per_second * 1000))::bigint end;
end $$;
