-- Failed sign-ins counted per username and client address together, so nobody at one address can lock a user out at
-- another (docs/limits.md, "Failed sign-ins"); beside them the per-address ceiling (the 'address' rows of
-- sign_in_failures, shared with reserve_sign_in of sql/0021, which the previous release still calls unchanged) and a
-- ceiling on the failures of all addresses together.
set local lock_timeout = '5s';

-- The instants of the newest failures of one username key (`usernameKey`, domain/integrators/users.ts) at one
-- address, at most the limit's count, as the rows of sign_in_failures keep theirs.
create table sign_in_pair_failures (
  username text not null,
  address text not null,
  times timestamptz[] not null default '{}',
  primary key (username, address)
);

-- Failures of every address together, counted in buckets of a sixtieth of the window: a few dozen small rows to sum,
-- and one row written per failure, after its hash (never while the pair's or the address's row is locked).
-- 32-bit counts on purpose (squawk's prefer-bigint-over-int, docs/migrations.md): a bucket counts the failed sign-ins
-- of a sixtieth of the window, which the hash pool bounds far below 2^31.
-- squawk-ignore-file prefer-bigint-over-int
create table sign_in_failure_buckets (
  bucket timestamptz primary key,
  failures int not null default 0
);

create function sign_in_bucket_width(p_window interval) returns interval language sql immutable as $$
  select greatest(date_trunc('second', p_window / 60), interval '1 second')
$$;

-- Counts one failure (a wrong password, an unknown or disabled user) in the bucket of now.
create function count_sign_in_failure(p_window interval) returns void language sql as $$
  insert into sign_in_failure_buckets (bucket, failures)
  values (date_bin(sign_in_bucket_width(p_window), clock_timestamp(), timestamptz 'epoch'), 1)
  on conflict (bucket) do update set failures = sign_in_failure_buckets.failures + 1
$$;

-- Locks the address's row of sign_in_failures, made when missing, and returns its failures within the window. A
-- prune may delete the row between the insert and the lock: then it is made again.
create function lock_sign_in_address(p_address text, p_since timestamptz) returns timestamptz[] language plpgsql as $$
declare
  held timestamptz[];
begin
  loop
    insert into sign_in_failures (scope, key) values ('address', p_address) on conflict do nothing;
    select times into held from sign_in_failures where scope = 'address' and key = p_address for update;
    if found then
      return array(select t from unnest(held) t where t > p_since order by t);
    end if;
  end loop;
end $$;

-- The same for the row of a username at an address.
create function lock_sign_in_pair(p_username text, p_address text, p_since timestamptz)
returns timestamptz[] language plpgsql as $$
declare
  held timestamptz[];
begin
  loop
    insert into sign_in_pair_failures (username, address) values (p_username, p_address) on conflict do nothing;
    select times into held from sign_in_pair_failures
      where username = p_username and address = p_address for update;
    if found then
      return array(select t from unnest(held) t where t > p_since order by t);
    end if;
  end loop;
end $$;

-- Reserves one failure for the username at the address and for the address, or none: returns 0 ms and the instant
-- reserved, or the milliseconds until the attempt may be tried. It waits when the pair has p_per_pair failures in the
-- window, or the address p_per_address; and, while all addresses together have p_global or more, when the address has
-- failed at all within the window (a fresh address is always tried: a correct password from elsewhere is never
-- refused). Locks: the pair's row, then the address's, as settle_sign_in_attempt does (docs/limits.md).
create function reserve_sign_in_attempt(
  p_username text, p_address text, p_per_pair int, p_per_address int, p_global int, p_window interval
) returns table (wait_ms bigint, reserved_at timestamptz) language plpgsql as $$
declare
  now_ timestamptz := clock_timestamp();
  width interval := sign_in_bucket_width(p_window);
  pair_times timestamptz[];
  address_times timestamptz[];
  global_clears timestamptz;
  wait bigint := 0;
begin
  pair_times := lock_sign_in_pair(p_username, p_address, now_ - p_window);
  address_times := lock_sign_in_address(p_address, now_ - p_window);
  now_ := clock_timestamp(); -- after the locks: an attempt that waited for them must not reserve an earlier instant
  if cardinality(pair_times) >= p_per_pair then
    wait := greatest(wait, ceil(extract(epoch from
      pair_times[cardinality(pair_times) - p_per_pair + 1] + p_window - now_) * 1000)::bigint);
  end if;
  if cardinality(address_times) >= p_per_address then
    wait := greatest(wait, ceil(extract(epoch from
      address_times[cardinality(address_times) - p_per_address + 1] + p_window - now_) * 1000)::bigint);
  end if;
  if wait = 0 and cardinality(address_times) > 0 then
    -- the newest bucket that alone with the newer ones holds p_global failures: the count drops below once it left
    select max(bucket) into global_clears from (
      select bucket, sum(failures) over (order by bucket desc) as newer
      from sign_in_failure_buckets where bucket > now_ - p_window - width
    ) b where newer >= p_global;
    if global_clears is not null then
      wait := ceil(extract(epoch from least(
        global_clears + width + p_window, address_times[cardinality(address_times)] + p_window) - now_) * 1000)::bigint;
    end if;
  end if;
  if wait > 0 then
    return query select greatest(wait, 1), null::timestamptz;
    return;
  end if;
  update sign_in_pair_failures
    set times = (pair_times || now_)[greatest(1, cardinality(pair_times) + 2 - p_per_pair):]
    where username = p_username and address = p_address;
  update sign_in_failures
    set times = (address_times || now_)[greatest(1, cardinality(address_times) + 2 - p_per_address):]
    where scope = 'address' and key = p_address;
  return query select 0::bigint, now_;
end $$;

-- Settles a reservation that is not a failure: a success clears the pair's failures and gives back the address's
-- place (the address's other failures stay: an attacker's own account must not reset its count); an attempt not tried
-- gives back both places. The pair's row first, then the address's, as reserve_sign_in_attempt locks them.
create function settle_sign_in_attempt(
  p_username text, p_address text, p_reserved_at timestamptz, p_succeeded boolean
) returns void language plpgsql as $$
begin
  update sign_in_pair_failures
    set times = case when p_succeeded then '{}' else array_remove(times, p_reserved_at) end
    where username = p_username and address = p_address;
  update sign_in_failures set times = array_remove(times, p_reserved_at)
    where scope = 'address' and key = p_address;
end $$;
