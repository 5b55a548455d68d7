-- An endpoint's payload filter: a CEL expression over the event's type and data, checked when it is set and evaluated
-- once per event at fan-out (domain/webhooks/outbox/filters.ts; docs/webhooks.md, "Filters"). Null, the default,
-- delivers every event the endpoint enables. The length bound repeats MAX_FILTER_LENGTH, so no row outgrows what the
-- API checks.
alter table webhook_endpoints add column filter text check (char_length(filter) <= 1000);
