// Auto-resume in the console, in a real browser against the real `baton serve --demo` of
// ../run.sh: the policy editor on a job page, and the chain of a run whose database went away
// under it and that continued by itself.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';

import { BASE, launch, login, runIdFromURL, shot, statusOf, TOKENS, until } from './helpers.mjs';

const DEFAULT_POLICY = { enabled: true, maxAttempts: 3, backoffSeconds: 5, on: ['LEASE_EXPIRED', 'SHUTDOWN', 'DATABASE'] };
const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED']);
let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  // Leave the demo jobs' policies as the server declares them, for the specs that follow.
  for (const name of ['demo-flaky', 'demo-collect']) {
    await gql(TOKENS.operator, `mutation($in: UpdateJobAutoResumeInput!) { updateJobAutoResume(input: $in) { userErrors { code } } }`, {
      in: { name, ...DEFAULT_POLICY },
    }).catch(() => undefined);
  }
  await browser?.close();
});

/**
 * gql sends one GraphQL operation with token and returns its data, failing on errors. An
 * internal error (the server's pooled connection was one the test cut) is tried again for a while.
 */
async function gql(token, query, variables = {}) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(`${BASE}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = await res.json();
    if (!body.errors?.length) return body.data;
    if (!body.errors.every((e) => e.extensions?.code === 'INTERNAL_SERVER_ERROR') || Date.now() > deadline) {
      throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const policyOf = async (name) =>
  (await gql(TOKENS.viewer, `query($n: String!) { job(name: $n) { autoResume { enabled maxAttempts backoffSeconds on } } }`, { n: name })).job
    .autoResume;

/** databaseURL is the server's database, which run.sh makes and exports as E2E_DATABASE_URL. */
function databaseURL() {
  assert.ok(process.env.E2E_DATABASE_URL, 'E2E_DATABASE_URL is unset: run the browser tests through e2e/run.sh');
  return process.env.E2E_DATABASE_URL;
}

/** cutDatabase ends every session of the server's database, as a restart or a failover would. */
function cutDatabase() {
  const sql = 'SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()';
  return Number(execFileSync('psql', [databaseURL(), '-qAtXc', sql], { encoding: 'utf8' }).trim());
}

test('an operator edits a job’s auto-resume policy: saved and read back; a bad value is refused next to its field', async () => {
  const page = await login(browser, 'operator');
  await page.goto('/admin/jobs/demo-flaky');
  const summary = page.getByTestId('auto-resume-summary');
  await summary.waitFor();
  assert.equal(await summary.innerText(), 'auto-resume on · 3 attempts · 5 s');
  assert.equal(await page.getByTestId('auto-resume-save').isDisabled(), true, 'Save is enabled with nothing changed');

  await page.getByTestId('auto-resume-max-attempts').fill('5');
  await page.getByTestId('auto-resume-backoff').fill('30');
  await page.getByTestId('auto-resume-cause-SHUTDOWN').uncheck();
  await page.getByTestId('auto-resume-save').click();
  await until('the saved policy in words', async () => (await summary.innerText()) === 'auto-resume on · 5 attempts · 30 s · holder died, database went away');
  assert.deepEqual(await policyOf('demo-flaky'), { enabled: true, maxAttempts: 5, backoffSeconds: 30, on: ['LEASE_EXPIRED', 'DATABASE'] });

  // Out of range: the server refuses it, the console says so next to the field, nothing changes.
  await page.getByTestId('auto-resume-max-attempts').fill('0');
  await page.getByTestId('auto-resume-save').click();
  const err = page.getByTestId('auto-resume-max-attempts-error');
  await err.waitFor();
  assert.match(await err.innerText(), /INVALID_INPUT/);
  assert.match(await err.innerText(), /1 to 100, not 0/);
  assert.equal((await policyOf('demo-flaky')).maxAttempts, 5, 'a refused value was written');
  await shot(page, 'ar-01-job-policy-refused');

  await page.getByTestId('auto-resume-max-attempts').fill('5');
  await page.getByTestId('auto-resume-enabled').uncheck();
  await page.getByTestId('auto-resume-save').click();
  await until('auto-resume off', async () => (await summary.innerText()) === 'auto-resume off');
  assert.equal((await policyOf('demo-flaky')).enabled, false);
  await shot(page, 'ar-02-job-policy-off');

  await page.goto('/admin/');
  await until('the job card summary', async () => (await page.getByTestId('auto-resume-demo-flaky').innerText()) === 'auto-resume off');
  assert.equal(await page.getByTestId('auto-resume-demo-collect').innerText(), 'auto-resume on · 3 attempts · 5 s');
  await shot(page, 'ar-02b-dashboard');
  await page.context().close();

  const phone = await login(browser, 'viewer', { viewport: { width: 390, height: 844 } });
  await phone.goto('/admin/jobs/demo-flaky');
  await phone.getByTestId('auto-resume-panel').waitFor();
  assert.equal(await phone.getByTestId('auto-resume-save').isDisabled(), true, 'a viewer may save a policy');
  await phone.getByTestId('auto-resume-panel').scrollIntoViewIfNeeded();
  await shot(phone, 'ar-03-job-policy-viewer-390');
  await phone.context().close();
});

test('a run whose database went away continues by itself; its page and the resume’s page show the chain', async () => {
  const page = await login(browser, 'operator');
  const runOf = async (id) =>
    (
      await gql(
        TOKENS.operator,
        `query($id: ID!) { run(id: $id) { id status stopReason attempt progress { processed } autoResume { outcome dueAt resumedBy { id } } } }`,
        { id },
      )
    ).run;
  // A backoff long enough to watch the countdown.
  await gql(TOKENS.operator, `mutation { updateJobAutoResume(input: {name: "demo-collect", backoffSeconds: 15}) { userErrors { code } } }`);
  // A run long enough to cut the database under it (run.sh: 300 pages at 150ms).
  const started = await until('demo-collect to start', async () => {
    const d = await gql(TOKENS.operator, `mutation { startJob(input: {name: "demo-collect"}) { run { id } userErrors { code } } }`);
    const active = await gql(TOKENS.operator, `{ job(name: "demo-collect") { activeRun { id } } }`);
    if (!d.startJob.run && active.job.activeRun && d.startJob.userErrors[0]?.code === 'ALREADY_RUNNING') {
      await gql(TOKENS.operator, `mutation($id: ID!) { cancelRun(input: {runId: $id}) { userErrors { code } } }`, { id: active.job.activeRun.id });
    }
    return d.startJob.run?.id;
  });
  await until('the run to make progress', async () => {
    const r = (await gql(TOKENS.operator, `query($id: ID!) { run(id: $id) { status progress { processed } } }`, { id: started })).run;
    return r.status === 'RUNNING' && r.progress.processed > 2;
  });
  await page.goto(`/admin/runs/${encodeURIComponent(started)}`);
  await page.getByTestId('run-title').waitFor();

  // Cut every session; a write of the run fails and its worker ends it FAILED for the
  // database's sake (DATABASE_UNAVAILABLE), the end retried on a fresh session (not left to
  // the recoverer a lease later). Cut again only if the run still makes progress.
  let cutAt = -1;
  const dead = await until(
    'the run to end when its database goes away',
    async () => {
      const r = await runOf(started);
      if (TERMINAL.has(r.status)) return r;
      if (cutAt < 0 || r.progress.processed > cutAt + 3) {
        cutDatabase();
        cutAt = r.progress.processed;
      }
      return null;
    },
    90_000,
    250,
  );
  assert.equal(dead.status, 'FAILED', `the run ended ${dead.status} (${dead.stopReason})`);
  assert.equal(dead.stopReason, 'DATABASE_UNAVAILABLE', `stop reason ${dead.stopReason}: the worker did not record the end`);
  assert.equal(dead.attempt, 0);
  assert.ok(dead.autoResume && ['PENDING', 'RESUMED'].includes(dead.autoResume.outcome), `auto-resume ${JSON.stringify(dead.autoResume)}`);

  // The page counts down to the resume, then names the resume. (It reloads if the cut
  // failed its requests.)
  const status = page.getByTestId('run-status');
  await until(
    'FAILED on the page',
    async () => {
      if ((await statusOf(status).catch(() => null)) === 'FAILED') return true;
      await page.reload();
      return false;
    },
    30_000,
    3000,
  );
  const due = page.getByTestId('auto-resume-pending');
  const first = (await runOf(started)).autoResume.outcome === 'PENDING' ? await due.innerText().catch(() => '') : '';
  if (first !== '') {
    assert.match(first, /^auto-resume due (in \d+ s|now)$/);
    await shot(page, 'ar-04-run-resume-due');
    if (first !== 'auto-resume due now') {
      await until('the countdown to tick', async () => (await due.innerText().catch(() => first)) !== first, 5_000, 100);
    }
  }
  const resumedBy = page.getByTestId('auto-resume-resumed');
  await until('the page to name the run that resumed it', async () => /^resumed by #\d+$/.test(await resumedBy.innerText().catch(() => '')), 60_000);
  assert.match(await page.getByTestId('run-message').innerText(), /the database went away/);
  await shot(page, 'ar-05-run-resumed-by');

  await resumedBy.getByRole('link').click();
  await until('the resume’s page', async () => {
    const id = runIdFromURL(page.url());
    return id && id !== started;
  });
  const resume = runIdFromURL(page.url());
  assert.equal((await runOf(started)).autoResume.resumedBy.id, resume);
  await page.getByTestId('run-trigger').waitFor();
  assert.equal(await page.getByTestId('run-trigger').getAttribute('data-value'), 'AUTO_RESUME');
  const attempt = page.getByTestId('auto-resume-attempt');
  await attempt.waitFor();
  assert.match(await attempt.innerText(), /^auto-resume 1 of 3 · resumed from #\d+$/);
  assert.equal(runIdFromURL(await attempt.getByRole('link').evaluate((a) => a.href)), started);
  // The timeline is the resume's own: nothing the page saw live of the run it came from.
  await until('the resume to be running', async () => (await runOf(resume)).status === 'RUNNING', 30_000);
  const timeline = await page.getByTestId('run-timeline').innerText();
  assert.doesNotMatch(timeline, /Failed/, `the running resume's timeline shows a failure it never had:\n${timeline}`);
  await shot(page, 'ar-06-resume-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'ar-07-resume-390');
  await page.setViewportSize({ width: 1280, height: 900 });

  // Leave the cluster quiet: a cancelled run is never resumed.
  await until('the resume to be cancellable', async () => page.getByTestId('run-cancel').isEnabled(), 30_000);
  await page.getByTestId('run-cancel').click();
  await until('the resume to stop', async () => TERMINAL.has(await statusOf(page.getByTestId('run-status'))), 30_000);
  await page.context().close();
});
