-- An expansion's lock on its organization's outbox, for its transaction:
-- expansions of one organization run one at a time, so its deliveries get
-- their ids in the order of its outbox rows.
SELECT pg_advisory_xact_lock(hashtextextended(?key::text, 0))
