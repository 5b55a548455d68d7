-- What went wrong with a delivery record's last attempt, kept on the record so that the events list shows it without
-- reading the attempts (docs/webhooks.md, "Reading the events back"): the status (`HTTP 503`) or, when no answer came,
-- the reason (`timeout after 10000 ms`); null before any attempt and after a success.
alter table webhook_deliveries add column last_error text;
