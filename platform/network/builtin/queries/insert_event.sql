-- An event of the outbox (a template's verdict).
INSERT INTO network.events (kind, payload, created_at) VALUES (?kind, ?payload, ?now)
