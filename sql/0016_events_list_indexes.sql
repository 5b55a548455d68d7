-- Every filter of the events list (GET /api/v2/notifications/events) served by an index in the list's own order
-- (inserted_at, id), so a filter that matches few or no rows reads only those, however long the history
-- (docs/webhooks.md, "The events list and its indexes"). The company index serves no filter and from/to.
create index webhook_deliveries_type_idx on webhook_deliveries (company_id, type, inserted_at, id);
create index webhook_deliveries_status_idx on webhook_deliveries (company_id, status, inserted_at, id);
create index webhook_deliveries_endpoint_idx on webhook_deliveries (company_id, endpoint_id, status, inserted_at, id);
