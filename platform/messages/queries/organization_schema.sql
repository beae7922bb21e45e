-- The stored schema of a receipt's organization (referenceTenant).
SELECT schema_name FROM central.organizations WHERE id = ?org_id
