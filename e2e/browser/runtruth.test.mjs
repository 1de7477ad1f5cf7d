// A run page and job cards that tell the truth: the lease of a running run stays true while
// one watches it, a run with failed or ambiguous items is never shown plain green, a paused job
// does not contradict itself, and Pause asks first. Against a real `baton serve --demo`.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, statusOf, TOKENS, until } from './helpers.mjs';

let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

/** gqlAs posts a GraphQL request with a role's token and returns its data, failing on errors. */
const gqlAs = (role, query, variables = {}) => gql(TOKENS[role], query, variables);

const JOB_STATE = `query($n: String!) { job(name: $n) { name paused
  activeRun { id status cancelRequested }
  lastRun { id status needsAttention attention { failed rejected ambiguous } } } }`;

/**
 * freshRun brings a job to a state where a new run can start (unpaused, nothing active) and
 * starts one: RESUME on a job that never ran, RESTART otherwise (a RESUME after a finished run
 * has nothing left to do). It returns the run's id, or null when the start was refused.
 */
async function freshRun(job) {
  let j = (await gqlAs('operator', JOB_STATE, { n: job })).job;
  if (j.paused) await gqlAs('operator', `mutation($n: String!) { resumeJob(input: {name: $n}) { userErrors { code } } }`, { n: job });
  if (j.activeRun) {
    if (!j.activeRun.cancelRequested) await gqlAs('operator', `mutation($id: ID!) { cancelRun(input: {runId: $id}) { userErrors { code } } }`, { id: j.activeRun.id });
    await until(`${job} to have no active run`, async () => !(await gqlAs('operator', JOB_STATE, { n: job })).job.activeRun, 60_000, 500);
    j = (await gqlAs('operator', JOB_STATE, { n: job })).job;
  }
  const mode = j.lastRun ? 'RESTART' : 'RESUME';
  const d = await gqlAs('operator', `mutation($n: String!, $m: RunMode) { startJob(input: {name: $n, mode: $m}) { run { id } userErrors { code message } } }`, { n: job, m: mode });
  return d.startJob.run?.id ?? null;
}

test('the lease and heartbeat of a running run stay true for a minute of watching', async () => {
  const page = await login(browser, 'operator');
  const watchMs = 60_000;
  const lease = page.getByTestId('run-lease');
  const started = Date.now();
  let samples = 0;
  let longest = 0; // the longest stretch one page watched one RUNNING run, in ms
  while (Date.now() - started < watchMs) {
    // demo-collect runs for about 45 s in the e2e sizes: when it ends before the minute is
    // up, the watch goes on with a fresh run.
    const id = await freshRun('demo-collect');
    assert.ok(id, 'demo-collect did not start');
    await page.goto(`/admin/runs/${encodeURIComponent(id)}`);
    await until('the run to be RUNNING', async () => (await statusOf(page.getByTestId('run-status'))) === 'RUNNING', 30_000);
    const from = Date.now();
    while (Date.now() - started < watchMs) {
      if ((await statusOf(page.getByTestId('run-status'))) !== 'RUNNING') break;
      const left = Number(await lease.locator('[data-lease-left-ms]').getAttribute('data-lease-left-ms'));
      const age = Number(await lease.locator('[data-heartbeat-age-ms]').getAttribute('data-heartbeat-age-ms'));
      const text = await lease.innerText();
      // Re-read: the run may have ended between the reads, and an ended run has no lease.
      if ((await statusOf(page.getByTestId('run-status'))) !== 'RUNNING') break;
      samples++;
      const at = Math.round((Date.now() - started) / 1000);
      assert.ok(left > 0, `at ${at}s the lease shown ended ${-left} ms ago: "${text}"`);
      assert.doesNotMatch(text, /expired/, `at ${at}s the lease reads "${text}"`);
      // Every page the demo collects is a fenced write that renews the heartbeat.
      assert.ok(age < 10_000, `at ${at}s the heartbeat shown is ${age} ms old: "${text}"`);
      if (samples === 3) {
        await shot(page, 'rt-01-running-lease-1280');
      }
      longest = Math.max(longest, Date.now() - from);
      await page.waitForTimeout(3_000);
    }
  }
  assert.ok(samples >= 15, `only ${samples} samples of a RUNNING run in a minute`);
  // The lease is 30 s: a page that kept its first snapshot shows it expired after that.
  assert.ok(longest >= 35_000, `no run was watched on one page past its lease (longest ${longest} ms)`);
  await shot(page, 'rt-02-running-lease-after-a-minute-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'rt-03-running-lease-390');
  await page.context().close();
});

test('a run with failed or ambiguous items is not shown plain green on the run page, the runs table and the job card', async () => {
  // demo-flaky's records meet rejections, conflicts and transient failures, and its run ends
  // SUCCEEDED: the job's code returned without error.
  const id = await freshRun('demo-flaky');
  assert.ok(id, 'demo-flaky did not start');
  let run;
  await until(
    'demo-flaky to finish',
    async () => {
      run = (await gqlAs('operator', `query($id: ID!) { run(id: $id) { status needsAttention attention { failed rejected ambiguous } progress { failed ambiguous } } }`, { id })).run;
      return run.status !== 'RUNNING' && run.status !== 'STARTING';
    },
    90_000,
    500,
  );
  assert.equal(run.status, 'SUCCEEDED', `demo-flaky ended ${run.status}`);
  assert.equal(run.needsAttention, true, `the run says it needs no attention: ${JSON.stringify(run)}`);
  assert.equal(run.attention.failed + run.attention.rejected, run.progress.failed, 'attention does not add up to progress.failed');

  const page = await login(browser, 'viewer');
  await page.goto(`/admin/runs/${encodeURIComponent(id)}`);
  const chip = page.getByTestId('run-status');
  await until('the run page to show the outcome', async () => (await chip.getAttribute('data-attention')) === 'true');
  assert.equal(await statusOf(chip), 'SUCCEEDED');
  assert.match(await chip.innerText(), /needs attention/i);
  const bar = page.getByTestId('run-progress');
  assert.equal(await bar.getAttribute('data-clean'), 'false', 'the bar is drawn clean');
  assert.ok((await page.getByTestId('run-progress-failed').count()) > 0, 'the bar has no failed part');
  assert.match(await page.getByTestId('run-attention').innerText(), /failed|rejected|ambiguous/);
  await shot(page, 'rt-04-run-needs-attention-1280');
  // The errors filter runs on the server, over every error row of the run.
  const total = page.getByTestId('errors-total');
  await until('the error total', async () => Number(await total.getAttribute('data-total')) > 1);
  await page.getByTestId('errors-search').fill('rec:0017');
  await until('the search to narrow the errors', async () => (await total.getAttribute('data-total')) === '1');
  await until('one error row shown', async () => (await page.getByTestId('error-row').count()) === 1);
  assert.match(await page.getByTestId('error-row').innerText(), /rec:0017/);
  assert.match(await total.innerText(), /match(es)? the filter \(all pages\)/);
  // The ledger card says how its counts relate to the header's.
  assert.match(await page.getByTestId('ledger-counts-note').innerText(), /ledger entr(y|ies) written by this run/);

  await page.goto('/admin/');
  const card = page.getByTestId('job-card-demo-flaky');
  await card.waitFor().catch(async (e) => {
    await shot(page, 'rt-05-jobs-page-without-the-card');
    throw new Error(`no demo-flaky card; console errors: ${page.consoleErrors.join(' | ')}`, { cause: e });
  });
  await until('the job card to show the outcome', async () => (await card.getByTestId('run-status-demo-flaky').getAttribute('data-attention')) === 'true');
  assert.match(await card.getByTestId('attention-demo-flaky').innerText(), /Needs attention: .*(failed|rejected)/);
  assert.equal(await card.getByTestId('run-progress').getAttribute('data-clean'), 'false');
  await shot(page, 'rt-05-job-card-needs-attention-1280');

  await page.goto('/admin/jobs/demo-flaky');
  const row = page.getByTestId('run-row').first();
  await until('the runs table to show the outcome', async () => (await row.getByTestId('run-row-status').getAttribute('data-attention')) === 'true');
  assert.match(await row.getByTestId('run-row-attention').innerText(), /failed|rejected/);
  await shot(page, 'rt-06-runs-table-needs-attention-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/admin/runs/${encodeURIComponent(id)}`);
  await page.getByTestId('run-attention').waitFor();
  await shot(page, 'rt-07-run-needs-attention-390');
  await page.context().close();
});

test('after a run that finished its generation, the main action is Run again, not a Resume of nothing', async () => {
  // demo-flaky's last run SUCCEEDED (the test before made one; make one if run alone). Each of
  // its fires is a new generation, so a RESUME now would be a run of 0 items.
  let j = (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job;
  if (j.lastRun?.status !== 'SUCCEEDED' || j.activeRun) {
    const id = await freshRun('demo-flaky');
    assert.ok(id, 'demo-flaky did not start');
    await until('demo-flaky to succeed', async () => (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job.lastRun?.status === 'SUCCEEDED', 90_000, 500);
  }
  j = (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job;
  const number = atob(j.lastRun.id).split(':').pop();
  const page = await login(browser, 'operator');
  await page.goto('/admin/');
  const card = page.getByTestId('job-card-demo-flaky');
  await card.waitFor();
  const resume = card.getByTestId('resume-demo-flaky');
  await until('Resume to be off', async () => resume.isDisabled());
  const reason = await card.locator('[data-disabled-reason]').first().getAttribute('data-disabled-reason');
  assert.match(reason, new RegExp(`Run #${number} finished generation \\d+: nothing is left to resume`));
  const again = card.getByTestId('restart-demo-flaky');
  assert.equal(await again.innerText(), 'Run again');
  assert.equal(await again.getAttribute('data-run-again'), 'true');
  await shot(page, 'rt-12-run-again-1280');
  // Run again is a RESTART through its confirmation: a new generation, with items.
  const before = (await gqlAs('operator', `query { job(name: "demo-flaky") { currentGeneration } }`)).job.currentGeneration;
  await again.click();
  await page.getByTestId('restart-confirm').click();
  let run;
  await until(
    'a new run with items',
    async () => {
      run = (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job.activeRun ?? (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job.lastRun;
      return run && run.id !== j.lastRun.id;
    },
    30_000,
    250,
  );
  await until(
    'the new run to process items',
    async () => {
      const r = (await gqlAs('operator', `query($id: ID!) { run(id: $id) { mode generation progress { processed } } }`, { id: run.id })).run;
      return r.mode === 'RESTART' && r.generation > before && r.progress.processed > 0;
    },
    90_000,
    500,
  );
  await page.context().close();
});

test('Pause asks first; a paused job shows no fires and offers only Unpause job', async () => {
  const page = await login(browser, 'operator');
  const j = (await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job;
  if (j.paused) await gqlAs('operator', `mutation { resumeJob(input: {name: "demo-flaky"}) { userErrors { code } } }`);
  await page.goto('/admin/');
  const card = page.getByTestId('job-card-demo-flaky');
  await card.getByTestId('pause-demo-flaky').click();
  const confirm = page.getByTestId('pause-confirm-demo-flaky');
  await confirm.waitFor();
  // Nothing is paused until the operator confirms.
  assert.equal((await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job.paused, false, 'the job paused before the confirmation');
  await shot(page, 'rt-08-pause-confirm-1280');
  await confirm.click();
  await card.getByTestId('paused-demo-flaky').waitFor();
  await until('the card to say no fires while paused', async () => /none while paused/.test(await card.getByTestId('next-fire-demo-flaky').innerText()));
  assert.equal(await card.getByTestId('resume-demo-flaky').count(), 0, 'a run Resume beside Unpause job');
  assert.match(await card.getByTestId('resume-job-demo-flaky').innerText(), /Unpause job/);
  await shot(page, 'rt-09-paused-card-1280');

  await page.goto('/admin/jobs/demo-flaky');
  const fires = page.getByTestId('next-fires');
  await fires.waitFor();
  assert.equal(await fires.getAttribute('data-paused'), 'true');
  assert.match(await fires.innerText(), /None while the job is paused/);
  await shot(page, 'rt-10-paused-job-1280');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'rt-11-paused-job-390');

  await page.getByTestId('resume-job-demo-flaky').click();
  await until('the job to be unpaused', async () => !(await gqlAs('operator', JOB_STATE, { n: 'demo-flaky' })).job.paused);
  await until('Pause job to be offered again', async () => (await page.getByTestId('pause-demo-flaky').count()) === 1);
  assert.equal(await page.getByTestId('resume-job-demo-flaky').count(), 0, 'Unpause job still offered on an unpaused job');
  await page.context().close();
});
