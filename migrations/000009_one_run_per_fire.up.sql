-- One fire of a job starts at most one run, whatever happens to the compare-and-set claim on
-- job_settings.next_scheduled_at (a claim set back by hand or by a restored backup, a next fire
-- computed again for an instant that already ran). scheduled_for is set on SCHEDULED runs only:
-- the instant of the fire. A second run for the same (job, instant) fails on this index, its
-- transaction rolls back whole (no run, no new generation), and the runner drops that claim.

-- A fire that already ran more than once (before this index, a daylight-saving fall back could
-- do that) keeps its instant on its first run; its later runs keep trigger SCHEDULED and give
-- up scheduled_for, so the index can be built.
UPDATE job_runs r SET scheduled_for = NULL
WHERE r.scheduled_for IS NOT NULL
  AND EXISTS (SELECT 1 FROM job_runs f
              WHERE f.job_name = r.job_name AND f.scheduled_for = r.scheduled_for AND f.id < r.id);

CREATE UNIQUE INDEX job_runs_one_per_fire ON job_runs (job_name, scheduled_for) WHERE scheduled_for IS NOT NULL;
