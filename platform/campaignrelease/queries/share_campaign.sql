-- Share-locks campaign id for a release transaction and reads its status
-- and release generation: pause, resume and cancel lock it FOR UPDATE, so
-- nothing is released after either commits, nor by the job of a
-- generation a resume left behind.
SELECT status, release_gen FROM ?schema.campaigns WHERE id = ?id::bigint FOR SHARE
