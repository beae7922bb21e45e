-- Campaigns (docs/api.md, §Campaigns): one message to many recipients,
-- released as the pacing allows.
--
-- campaigns: the campaign, its content and its state. A template campaign
-- has template_id (and the template's name and language, as it was named
-- at creation) and type 'template'; a plain one has type and content (and
-- the file fields of a media type), the rules of a message's body. status
-- moves draft → running | scheduled → paused ↔ running | scheduled →
-- completed, or → canceled from any state before completed (platform/
-- campaigns, each move one UPDATE ... WHERE status IN (allowed)).
-- recipients is the number of campaign_recipients rows, kept by the
-- statement that adds them (the 100,000 cap reads it).
CREATE TABLE campaigns (
    id                bigserial   PRIMARY KEY,
    name              text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    status            text        NOT NULL DEFAULT 'draft'
                                  CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'completed', 'canceled')),
    sender_number_ids bigint[]    NOT NULL CHECK (cardinality(sender_number_ids) BETWEEN 1 AND 50),
    template_id       bigint,
    template_name     text,
    template_language text,
    type              text        NOT NULL CHECK (type IN ('text', 'image', 'voice', 'document', 'template')),
    content           text,
    file_name         text,
    file_size         bigint,
    file_type         text,
    duration          integer,
    send_at           timestamptz,
    reserve_percent   integer     NOT NULL DEFAULT 10 CHECK (reserve_percent BETWEEN 0 AND 100),
    recipients        integer     NOT NULL DEFAULT 0 CHECK (recipients >= 0),
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    started_at        timestamptz,
    paused_at         timestamptz,
    completed_at      timestamptz,
    canceled_at       timestamptz,
    CONSTRAINT campaigns_content_check CHECK (
           type = 'template' AND template_id IS NOT NULL AND content IS NULL
        OR type <> 'template' AND template_id IS NULL AND content IS NOT NULL)
);
CREATE INDEX campaigns_status_idx ON campaigns (status, id DESC);

-- campaign_recipients: who a campaign goes to, in order of addition (id):
-- the release takes the next pending ones in that order through
-- campaign_recipients_status_idx. A phone is in a campaign once.
-- status: pending (not yet released), released (its message is
-- message_id, sent from sender_number_id), skipped (error_code says
-- why: a check it failed at release, or campaign_canceled).
CREATE TABLE campaign_recipients (
    campaign_id      bigint      NOT NULL REFERENCES campaigns (id),
    id               bigserial,
    phone            text        NOT NULL,
    variables        jsonb,
    client_reference text,
    status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'released', 'skipped')),
    sender_number_id bigint,
    message_id       bigint,
    error_code       text,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (campaign_id, id),
    CONSTRAINT campaign_recipients_phone_key UNIQUE (campaign_id, phone)
);
CREATE INDEX campaign_recipients_status_idx ON campaign_recipients (campaign_id, status, id);

-- A campaign's messages carry it. No foreign key (as template_id): the
-- history keeps them whatever happens to the campaign. Nullable without a
-- default: adding it rewrites nothing, and the partial indexes (the
-- history's campaign_id filter, a campaign's counts by status) hold only
-- campaign messages, so a send through the API pays nothing for them.
ALTER TABLE messages ADD COLUMN campaign_id bigint;
CREATE INDEX messages_campaign_idx ON messages (campaign_id, id DESC) WHERE campaign_id IS NOT NULL;
CREATE INDEX messages_campaign_status_idx ON messages (campaign_id, status) WHERE campaign_id IS NOT NULL;
