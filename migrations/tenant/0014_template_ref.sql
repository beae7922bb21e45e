-- What the network needs of a template message besides its text
-- (docs/api.md, §Templates: what the network gets).
--
-- template_ref is the template's name and language and the send's
-- variables, as JSON text ({"name", "language", "variables"}): a network
-- that delivers templates as such (the HTTP adapter passes it on) gets
-- them even after the template is deleted. NULL for other messages.
-- Nullable without a default: adding it rewrites nothing.
ALTER TABLE messages ADD COLUMN template_ref text;
