-- What a stopped or dead worker process held goes back to the queue, except the drain jobs graphile-worker superseded
-- while they were locked: add_job, finding a job of the same key locked, clears its key and spends its attempts so that
-- it is not run again, and adds a new job under the key. Unlocked, such a job stays in the queue forever, never run
-- (seen as a deliver job left queued after a worker stop in `deno task bench`). Its key lives on in the newer job, so
-- it is deleted instead (docs/webhooks.md, Fair delivery under backlog).
create view superseded_drain_jobs as
  select j.id, j.locked_by from graphile_worker._private_jobs j
  join graphile_worker._private_tasks t on t.id = j.task_id
  where t.identifier = 'deliver_webhook' and j.key is null and j.attempts >= j.max_attempts and j.last_error is null;

create function hand_back_worker_jobs(worker_ids text[]) returns void language sql volatile as $$
  delete from graphile_worker._private_jobs
  where id in (select id from superseded_drain_jobs where locked_by = any(worker_ids));
  select graphile_worker.force_unlock_workers(worker_ids);
$$;

-- the ones already left behind
delete from graphile_worker._private_jobs where id in (select id from superseded_drain_jobs where locked_by is null);
