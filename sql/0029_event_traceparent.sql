-- The W3C trace context of the request that emitted an event, when tracing is on (docs/production.md, "Tracing"):
-- each delivery attempt, made later by a worker, continues that trace and sends it on as `traceparent`
-- (docs/webhooks.md, "Tracing"). Null when tracing was off or nothing was traced; 55 characters otherwise. Adding a
-- nullable column without a default rewrites nothing, on the parent or on its day partitions.
alter table events add column traceparent text;
