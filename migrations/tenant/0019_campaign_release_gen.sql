-- release_gen: the generation of a campaign's release job. Each start or
-- resume raises it and queues a release job carrying the new value
-- (queue.CampaignArgs.Gen); a tick whose job carries another generation
-- ends that job, and a release transaction of another generation records
-- nothing. So the job a resume queues never waits on the unfinished job
-- of the run before it, and a tick ends its job without completing it in
-- the tenant's transaction (River's tables live apart from the tenant
-- schema: docs/scaling.md, §Jobs). A constant default: adding it rewrites
-- nothing.
ALTER TABLE campaigns ADD COLUMN release_gen bigint NOT NULL DEFAULT 0;
