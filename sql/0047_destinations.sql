set local lock_timeout = '5s';

-- Destinations (docs/webhooks.md, "Destinations"): an endpoint whose url names a message broker (amqp, nats, redis,
-- mqtt) instead of an HTTP receiver. `transport` says which ('http' for every endpoint before this release, and for
-- those the previous release makes: it names its columns in every insert); `destination` where on the broker the
-- message goes (the transport's keys, `{type}` not yet replaced); `sealed_broker_credentials` the broker's user and
-- password (or NATS token) as JSON, sealed like a signing secret (domain/infra/secret_box.ts). No check constraint on
-- `transport`: the transports are the service's list (domain/webhooks/destinations/registry.ts), as payload versions
-- are. A constant default and two nullable columns: adding them changes no row and takes the lock for an instant.
alter table webhook_endpoints
  add column transport text not null default 'http',
  add column destination jsonb,
  add column sealed_broker_credentials text;

-- Where an endpoint's slot rows are numbered from (docs/production.md, "Broker endpoints and the previous release").
-- The previous release leases only slots numbered below an endpoint's max_concurrency (at most 100), so a broker
-- endpoint's slots, numbered from 1,000,000, are slots it never takes: it cannot lease a broker endpoint's record and
-- try it as HTTP, during an upgrade or after a rollback.
create or replace function endpoint_first_slot(transport text) returns integer
  language sql immutable parallel safe
  as $$ select case when transport = 'http' then 0 else 1000000 end $$;

-- The previous release also keeps slot rows in step with max_concurrency (its `fitSlots`), inserting 0..n-1 for an
-- active endpoint and deleting those above: for a broker endpoint updated through it, that would give it slots the
-- previous release leases and take away those this release leases. This trigger keeps every endpoint's slot rows in
-- its own range whichever release writes them: an insert outside the range is skipped, and so is a delete of a slot
-- an active endpoint still uses. This release's own inserts and deletes never meet either case. Slot rows change only
-- when an endpoint is created, updated, enabled or disabled, so the trigger costs nothing on the delivery path.
create function webhook_slots_in_range() returns trigger language plpgsql as $$
declare
  e record;
begin
  if tg_op = 'INSERT' then
    select transport into e from webhook_endpoints where id = new.endpoint_id;
    if new.slot < endpoint_first_slot(e.transport) or new.slot >= endpoint_first_slot(e.transport) + 1000000 then
      return null;
    end if;
    return new;
  end if;
  select transport, status, max_concurrency into e from webhook_endpoints where id = old.endpoint_id;
  if e.transport is distinct from 'http' and e.status = 'active' and old.slot >= endpoint_first_slot(e.transport)
    and old.slot < endpoint_first_slot(e.transport) + e.max_concurrency then
    return null;
  end if;
  return old;
end $$;

create trigger webhook_slots_in_range before insert or delete on webhook_slots
  for each row execute function webhook_slots_in_range();

-- An endpoint's url keeps its transport: the previous release, which accepts only http(s) urls, cannot turn a broker
-- endpoint into an HTTP one (its update fails instead), and this release refuses the change with a 422 before it gets
-- here (domain/webhooks/endpoints/endpoints.ts). The schemes are those of docs/webhooks.md, "Destinations".
create function webhook_endpoint_keeps_transport() returns trigger language plpgsql as $$
begin
  if (case split_part(new.url, ':', 1)
        when 'http' then 'http' when 'https' then 'http'
        when 'amqp' then 'amqp' when 'amqps' then 'amqp'
        when 'nats' then 'nats' when 'tls' then 'nats'
        when 'redis' then 'redis' when 'rediss' then 'redis'
        when 'mqtt' then 'mqtt' when 'mqtts' then 'mqtt'
      end) is distinct from new.transport then
    raise exception 'webhook endpoint %: url % does not belong to transport %', new.id, split_part(new.url, ':', 1),
      new.transport using errcode = 'check_violation';
  end if;
  return new;
end $$;

create trigger webhook_endpoint_keeps_transport before update of url, transport on webhook_endpoints
  for each row execute function webhook_endpoint_keeps_transport();
