-- Drain jobs carry a job key per endpoint lane (docs/webhooks.md, Fair delivery under backlog): the queue holds at
-- most one waiting job per lane, so a record no longer points at a job of its own to delete once it is leased.
alter table webhook_deliveries drop column wake_job_id;
