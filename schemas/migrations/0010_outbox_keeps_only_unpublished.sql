-- The outbox keeps only what waits to be published: the publisher deletes the rows the broker
-- acknowledged, where it used to set published_at and keep them forever. The history of every
-- change stays in entitlement_changes (append-only); a published outbox row was a second copy of it
-- that no query read. Marking a row published wrote a whole new version of it (its body is the change
-- event, about 1.4 kB) and a new entry in the key's index; a delete writes neither. And the partial
-- index of unpublished rows, which every change also wrote, is the key's index now.
--
-- published_at stays, always NULL from now on, for the grant replicas of the previous release while a
-- rolling update replaces them: they select `WHERE published_at IS NULL` and mark rows published;
-- whatever they mark is skipped by this release as by theirs. A later migration may drop it.
DELETE FROM outbox WHERE published_at IS NOT NULL;
DROP INDEX outbox_unpublished;
