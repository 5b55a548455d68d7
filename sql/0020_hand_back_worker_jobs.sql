-- What a stopped or dead worker process held goes back to the queue, except the drain jobs graphile-worker superseded
-- while they were locked: add_job, finding a job of the same key locked, clears its key and spends its attempts so that
-- it is not run again, and adds a new job under the key. Unlocked, such a job stays in the queue forever, never run
-- (seen as a deliver job left queued after a worker stop in `deno task bench`). Its key lives on in the newer job, so
-- it is deleted instead (docs/webhooks.md, Fair delivery under backlog).
create function hand_back_worker_jobs(worker_ids text[]) returns void language sql volatile as $$
  delete from graphile_worker._private_jobs j
  using graphile_worker._private_tasks t
  where t.id = j.task_id and t.identifier = 'deliver_webhook' and j.locked_by = any(worker_ids)
    and j.key is null and j.attempts >= j.max_attempts and j.last_error is null;
  select graphile_worker.force_unlock_workers(worker_ids);
$$;

-- the ones already left behind
delete from graphile_worker._private_jobs j
using graphile_worker._private_tasks t
where t.id = j.task_id and t.identifier = 'deliver_webhook' and j.locked_at is null
  and j.key is null and j.attempts >= j.max_attempts and j.last_error is null;
