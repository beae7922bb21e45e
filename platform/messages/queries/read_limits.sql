-- An organization's limits (messages.ReadLimits), in a statement of their
-- own: a tenant statement never joins central.organizations.
SELECT default_daily_limit, sender_rate, sender_burst
  FROM central.organizations WHERE id = ?org_id
