set local lock_timeout = '5s';

-- The quota's fast path (docs/limits.md, "Stored objects"; docs/performance.md, "The money path"): a registration
-- takes its place on its connection's stripe of company_usage with a plain UPDATE inside its own statement, without
-- take_company_usage's call and subtransaction. When that stripe has no room left (or no row yet, or its shares were
-- made for other quotas), the statement calls this function, which fails it: everything it wrote and every lock it
-- took go with it, and the service sends it again with take_company_usage, which shares out again or refuses with the
-- exact answer. Failing the statement, rather than going on to take_company_usage in it, is what keeps the fast path
-- free of deadlocks: an UPDATE that rechecked a stripe another create changed keeps its lock even when it no longer
-- fits, and held into take_company_usage's ordered locking of every stripe it could wait for a create that waits for
-- it. A new function: the previous release calls none of it.
create function company_usage_share_spent() returns boolean language plpgsql volatile as $$
begin
  raise exception 'company usage share spent' using errcode = 'QUOT0';
end
$$;
