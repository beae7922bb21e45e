-- Records a migration applied to the schema.
INSERT INTO ?schema.schema_migrations (version, name) VALUES (?version, ?name)
