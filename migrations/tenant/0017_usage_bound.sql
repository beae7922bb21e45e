-- bound: the limit a raise of the row's counter was checked against, as
-- the statement that raised it carried it (the sender's daily limit, less
-- a campaign's reserve). The counter statements compare with the proposed
-- row's bound (ON CONFLICT ... WHERE counter < EXCLUDED.bound) instead of
-- a subquery, which Citus refuses in an INSERT on a distributed table
-- (docs/scaling.md, §Run on Citus). Only the statements read it, through
-- EXCLUDED; the stored value is the first raise of the day's and means
-- nothing after. Nullable without a default: adding it rewrites nothing.
ALTER TABLE daily_usage ADD COLUMN bound integer;
