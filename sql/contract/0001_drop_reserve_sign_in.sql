set local lock_timeout = '5s';

-- 1.2.0's contract step (CHANGELOG.md): the sign-in reservation of sql/0021, which 1.0.0 called and 1.1.0 replaced by
-- reserve_sign_in_attempt (sql/0034). Neither 1.1.0, the release 1.2.0 rolls back to, nor 1.2.0 calls it.
drop function reserve_sign_in(text, text, integer, integer, interval);
