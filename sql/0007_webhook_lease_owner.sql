-- Which worker process holds a lease, so that when that process is found dead (worker_processes) its slots and
-- in-flight records are freed at once and redelivered, instead of waiting for the lease to run out.
alter table webhook_slots add column leased_by uuid;
alter table webhook_deliveries add column leased_by uuid;

-- The recovery sweep looks for due records that nothing is delivering.
create index webhook_deliveries_stalled_idx on webhook_deliveries (next_attempt_at) where status = 'pending';
