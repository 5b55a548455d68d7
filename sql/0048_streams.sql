set local lock_timeout = '5s';

-- Pull streams (docs/webhooks.md, "Pull streams"): a subscriber like an endpoint, with no URL, whose consumer reads its
-- messages with a cursor and acknowledges them. A stream's messages are the company's events themselves, which are
-- stored whether or not anyone subscribes: nothing is written per stream and per event. What a stream needs beside
-- them is an order that a cursor can follow without skipping an event whose transaction commits late, which the events'
-- ids do not give (two transactions commit in either order): `stream_log`, one row per event of a company that has a
-- stream, in the order of its transaction's id (`xid8`), read only below the oldest transaction still running
-- (`pg_snapshot_xmin`), so every row a cursor passes was committed before it passed (docs/webhooks.md, "Pull streams").

create table webhook_streams (
  id uuid primary key,
  company_id uuid not null references companies (id),
  -- 'api' (made through the API) or 'listen' (made by `deno task listen` for one machine, `name`)
  kind text not null default 'api',
  name text,
  description text,
  enabled_events text[] not null,
  filter text,
  payload_version text,
  -- its signing secret, sealed like an endpoint's (domain/infra/secret_box.ts)
  sealed_secret text not null,
  -- where its messages start (the transactions that got their id after it was made) and the oldest position still
  -- readable: the start, moved on by the backlog cap or the retention, which count what they drop
  floor_txid xid8 not null,
  floor_event uuid,
  dropped bigint not null default 0,
  -- the committed position: the last message acknowledged; null: none yet
  acked_txid xid8,
  acked_event uuid,
  last_read_at timestamptz,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index webhook_streams_company_idx on webhook_streams (company_id, id);
create unique index webhook_streams_listen_idx on webhook_streams (company_id, name) where kind = 'listen';

-- One row per event of a company with a stream, in its transaction's order. Written by a trigger on events, so an
-- event of any release (the previous one's too, during an upgrade) is in it.
create table stream_log (
  company_id uuid not null,
  txid xid8 not null default pg_current_xact_id(),
  event_id uuid not null,
  type text not null,
  event_inserted_at timestamptz not null,
  primary key (company_id, txid, event_id)
);

-- The retention deletes by age, as it does the events (domain/webhooks/endpoints/retention.ts).
create index stream_log_inserted_idx on stream_log using brin (event_inserted_at);

-- Only companies with a stream pay for the row; the probe is one index lookup. A stream is made under the company's
-- row lock (FOR UPDATE), which waits for every transaction holding the key-share lock an event's foreign key takes,
-- and holds back new ones until it commits: this trigger runs after the foreign key's (the names sort so), with a
-- snapshot taken after that lock, so it sees every stream made before the event's transaction could write it.
create function log_event_for_streams() returns trigger language plpgsql as $$
begin
  if exists (select 1 from webhook_streams where company_id = new.company_id) then
    insert into stream_log (company_id, event_id, type, event_inserted_at)
    values (new.company_id, new.id, new.type, new.inserted_at);
  end if;
  return null;
end $$;

create trigger zz_events_log_for_streams after insert on events
  for each row execute function log_event_for_streams();
