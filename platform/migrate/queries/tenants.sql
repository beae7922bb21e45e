-- Every organization's tenant, by id.
SELECT id, schema_name FROM central.organizations WHERE schema_name IS NOT NULL ORDER BY id
