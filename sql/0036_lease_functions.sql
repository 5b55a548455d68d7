set local lock_timeout = '5s';

-- The lease's rules as SQL functions (docs/architecture.md, "Leases and slots"), so that every statement of
-- domain/webhooks/engine/statements/ says them by name, on whichever row it leases, instead of building them in
-- TypeScript from a table alias passed as a string. Each is one SQL expression, which the planner inlines where it is
-- called: the plans and their index use are those of the expression written out (the EXPLAIN in docs/performance.md,
-- "Leases as functions").
--
-- Expand only: new functions, which 1.1.0 and earlier never call.

-- A slot or a record may be leased when nobody holds it, or its holder let the lease run out (a crash).
create or replace function lease_is_free(leased_until timestamptz) returns boolean
  language sql stable parallel safe
  as $$ select leased_until is null or leased_until < now() $$;

-- A lease of `ms` milliseconds from now.
create or replace function lease_until(ms integer) returns timestamptz
  language sql stable parallel safe
  as $$ select now() + ms * interval '1 millisecond' $$;

-- How many slots of an endpoint may be in use: none once it is disabled, one when it is sequential.
create or replace function endpoint_slot_limit(status text, delivery_mode text, max_concurrency integer)
  returns integer
  language sql immutable parallel safe
  as $$ select case when status <> 'active' then 0 when delivery_mode = 'sequential' then 1 else max_concurrency end $$;
