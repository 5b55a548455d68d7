-- Webhook records are claimed straight from webhook_deliveries by the drainers of every worker process, woken by
-- NOTIFY webhook_due and a retry timer (docs/webhooks.md, Fair delivery under backlog): no graphile-worker job carries a
-- delivery any more. What worked around graphile-worker's drain jobs goes: the add_jobs wrapper (sql/0019) and the
-- hand-back that read graphile-worker's private tables (sql/0020); a stopped worker's jobs are freed with
-- graphile_worker.force_unlock_workers, its public API. Drain jobs still queued by the version before run as no-ops.
drop function hand_back_worker_jobs(text[]);
drop view superseded_drain_jobs;
drop function add_drain_jobs(graphile_worker.job_spec[], boolean);
