-- An integrator registering customers in bulk inserts many people of one company at once. The foreign key to
-- companies made each insert take a KEY SHARE lock on that one company row, and concurrent lockers of a row share
-- a MultiXact: about a fifth of the insert rate under 32 concurrent requests. The company row always exists
-- before any of its people (it is created on the first authenticated request and never deleted), so the key
-- adds no protection that the code path does not already give.
alter table people drop constraint people_company_id_fkey;
