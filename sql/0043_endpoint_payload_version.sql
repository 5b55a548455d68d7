set local lock_timeout = '5s';

-- The payload version an endpoint is pinned to (docs/webhooks.md, "Payload versions"): the body shape it was built
-- against, which a newer shape never changes. Null: not pinned, which means the first version, the bodies the
-- original interface fixes (docs/webhooks.md, "Bodies"), so every endpoint made before this column keeps receiving
-- exactly what it received. No check
-- constraint: the versions are the service's list (domain/webhooks/outbox/payload_versions.ts), and a new one would
-- need a migration to be accepted. A nullable column without a default: the previous release, which does not know
-- it, inserts and reads endpoints as before (and renders every body in the first version).
alter table webhook_endpoints add column payload_version text;
