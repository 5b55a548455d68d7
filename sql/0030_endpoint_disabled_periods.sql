-- Replay after disable (docs/webhooks.md, "Replay what a disabled endpoint missed"): recover with include_skipped
-- sends an endpoint the events it would have received while it was disabled. While disabled it gets no records
-- (emitEvent fans out to active endpoints only), and once enabled again `disabled_at` is gone, so the periods are
-- kept here: one row per time the endpoint was disabled, open (`disabled_until` null) while it still is.
create table webhook_endpoint_disabled_periods (
  company_id uuid not null,
  endpoint_id uuid not null references webhook_endpoints (id),
  disabled_from timestamptz not null,
  disabled_until timestamptz,
  primary key (endpoint_id, disabled_from)
);

-- Written by a trigger on the status column rather than by each caller: an endpoint is disabled by hand, all at
-- once, or by its attempts (`disabling()` is a SET list the delivery recorder puts in its own statements), and
-- enabled again; every one of those updates writes the period in its own transaction, and no future path can forget
-- it. The trigger runs only when the status changes, never on the recorder's other updates of the row.
create function webhook_endpoint_disabled_period() returns trigger language plpgsql as $$
begin
  if new.status = 'disabled' then
    insert into webhook_endpoint_disabled_periods (company_id, endpoint_id, disabled_from)
    values (new.company_id, new.id, coalesce(new.disabled_at, now()))
    on conflict do nothing;
  else
    -- the moment of the update, not the transaction's start: an event whose transaction began after that start
    -- and looked for active endpoints before this commit got no record, and still falls inside the period
    update webhook_endpoint_disabled_periods set disabled_until = clock_timestamp()
    where endpoint_id = new.id and disabled_until is null;
  end if;
  return null;
end
$$;

create trigger webhook_endpoints_disabled_period after update of status on webhook_endpoints
  for each row when (old.status is distinct from new.status) execute function webhook_endpoint_disabled_period();

-- Endpoints disabled before this file: their period starts when they were disabled.
insert into webhook_endpoint_disabled_periods (company_id, endpoint_id, disabled_from)
select company_id, id, coalesce(disabled_at, updated_at) from webhook_endpoints where status = 'disabled';

-- The one endpoint a test event was sent to (`sendTestEvent`); null for an event fanned out to the company. Another
-- endpoint would not have received a test event, so a replay leaves it out. A column without a default: no rewrite.
alter table events add column only_endpoint_id uuid;
