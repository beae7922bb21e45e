-- SweepOutbox: whether the organization's webhook outbox holds a row.
SELECT EXISTS (SELECT FROM ?schema.webhook_outbox)
