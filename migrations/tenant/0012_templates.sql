-- Message templates (docs/api.md, §Templates): reviewed, reusable content
-- with variables, sent with POST /messages type "template".
--
-- Content is immutable: a change is a new template. variables holds the
-- template's variable names in order of first use ("1", "2", ... or
-- "first_name", ...); examples maps each name to its example value. status
-- moves pending → approved | rejected, approved ↔ paused | disabled, as the
-- network reviews (platform/templates, transitions). rejected_reason is set
-- only while rejected.
CREATE TABLE templates (
    id              bigserial   PRIMARY KEY,
    name            text        NOT NULL,
    language        text        NOT NULL,
    category        text        NOT NULL CHECK (category IN ('marketing', 'utility', 'authentication')),
    header          text        NOT NULL DEFAULT '',
    body            text        NOT NULL,
    footer          text        NOT NULL DEFAULT '',
    variables       text[]      NOT NULL DEFAULT '{}',
    examples        jsonb       NOT NULL DEFAULT '{}',
    status          text        NOT NULL DEFAULT 'pending'
                                CHECK (status IN ('pending', 'approved', 'rejected', 'paused', 'disabled')),
    rejected_reason text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT templates_name_language_key UNIQUE (name, language)
);
CREATE INDEX templates_status_idx ON templates (status, id DESC);

-- A template message keeps the template it was rendered from. No foreign
-- key: deleting a template keeps the messages sent with it (their content
-- is the rendered text). Nullable without a default: adding it rewrites
-- nothing. Its type is 'template'.
ALTER TABLE messages ADD COLUMN template_id bigint;
ALTER TABLE messages DROP CONSTRAINT messages_type_check;
ALTER TABLE messages ADD CONSTRAINT messages_type_check
    CHECK (type IN ('text', 'image', 'voice', 'document', 'template'));
