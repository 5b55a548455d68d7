-- graphile-worker's add_jobs clears the key of a job already locked, then upserts the key "where locked_at is null":
-- a worker that locks the job between the two steps makes the upsert neither update nor insert, and that wake-up is
-- lost (the record waits for the stalled-record sweep). This wrapper adds again whatever came back missing; the second
-- pass sees the job locked and starts a new one (docs/webhooks.md, Fair delivery under backlog).
create function add_drain_jobs(specs graphile_worker.job_spec[], preserve_run_at boolean) returns integer
language plpgsql volatile as $$
declare
  wanted graphile_worker.job_spec[] := specs;
  added text[];
  total integer := 0;
begin
  for pass in 1..5 loop
    exit when coalesce(array_length(wanted, 1), 0) = 0;
    select coalesce(array_agg(j.key), '{}') into added from graphile_worker.add_jobs(wanted, preserve_run_at) j;
    total := total + coalesce(array_length(added, 1), 0);
    select coalesce(array_agg(s), '{}') into wanted from unnest(wanted) s where s.job_key <> all(added);
  end loop;
  return total;
end
$$;
