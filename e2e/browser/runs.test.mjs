// The runs page across all jobs, run-number URLs, the run's time axis and bulk cancel, in a
// real browser against `baton serve --demo` (see ../run.sh). The tests run in order.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

let browser;
let page;
/** Run numbers this spec started, by job. */
const started = {};


const runOf = async (n) => (await gql(TOKENS.viewer, `query($f: RunsFilter) { runs(filter: $f) { nodes { id number status jobName } } }`, { f: { number: n } })).runs.nodes[0];

/** start starts a run of job (after the job's active run, if any, has ended) and returns its number. */
async function start(job) {
  let out;
  await until(`a run of ${job} to start`, async () => {
    const d = await gql(TOKENS.operator, `mutation($n: String!) { startJob(input: {name: $n}) { run { number } userErrors { code } } }`, { n: job });
    out = d.startJob.run?.number;
    return out !== undefined;
  });
  started[job] = out;
  return out;
}

async function waitEnded(n) {
  await until(`run ${n} to end`, async () => !['STARTING', 'RUNNING'].includes((await runOf(n))?.status), 60_000);
}

const rowNumbers = async () => page.getByTestId('runs-row').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-run-number'))));

before(async () => {
  browser = await launch();
  // serve --demo schedules demo-collect every 15 minutes: no scheduled run may land mid-test.
  await gql(TOKENS.operator, `mutation { updateJobSchedule(input: {name: "demo-collect", enabled: false}) { userErrors { code } } }`);
  for (const job of ['demo-flaky', 'demo-settlement', 'demo-flaky']) await waitEnded(await start(job));
  page = await login(browser, 'operator');
});

after(async () => {
  await browser?.close();
});

test('the runs page lists runs of every job, newest first, and is in the navigation', async () => {
  await page.getByRole('link', { name: 'Runs' }).click();
  await page.waitForURL(/\/admin\/runs$/);
  await page.getByTestId('runs-row').first().waitFor();
  const numbers = await rowNumbers();
  assert.deepEqual(numbers, [...numbers].sort((a, b) => b - a), 'newest first');
  const jobs = new Set(await page.getByTestId('runs-row').evaluateAll((rows) => rows.map((r) => r.querySelector('a[href*="/admin/jobs/"]')?.textContent)));
  assert.ok(jobs.has('demo-flaky') && jobs.has('demo-settlement'), `jobs listed: ${[...jobs]}`);
  await shot(page, 'runs-01-all-1280');
});

test('filters live in the URL: reload and back/forward keep them', async () => {
  await page.goto('/admin/runs?job=demo-flaky');
  await page.getByTestId('runs-row').first().waitFor();
  const flaky = await rowNumbers();
  assert.ok(flaky.length >= 2, `demo-flaky rows: ${flaky}`);
  for (const n of flaky) assert.equal((await runOf(n)).jobName, 'demo-flaky');
  const status = (await runOf(flaky[0])).status;

  await page.getByTestId(`runs-status-${status}`).click();
  await page.waitForURL((u) => u.searchParams.get('status') === status && u.searchParams.get('job') === 'demo-flaky');
  await until('the rows to have the status', async () => {
    const s = await page.getByTestId('runs-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status')));
    return s.length > 0 && s.every((v) => v === status);
  });
  await page.reload();
  await page.getByTestId('runs-row').first().waitFor();
  assert.equal(new URL(page.url()).searchParams.get('status'), status);
  assert.ok(await page.getByTestId(`runs-status-${status}`).locator('input').isChecked(), 'the status chip is checked after a reload');
  assert.equal(await page.getByTestId('runs-filter-job').inputValue(), 'demo-flaky');

  await page.goBack();
  await page.waitForURL((u) => !u.searchParams.has('status') && u.searchParams.get('job') === 'demo-flaky');
  assert.ok(!(await page.getByTestId(`runs-status-${status}`).locator('input').isChecked()), 'back removes the status');
  await page.goForward();
  await page.waitForURL((u) => u.searchParams.get('status') === status);

  // A hand-edited address: what can be read applies, the rest is named.
  await page.goto('/admin/runs?job=demo-flaky&status=NOPE');
  await page.getByTestId('runs-filter-problems').filter({ hasText: 'Unknown status "NOPE" ignored.' }).waitFor();
});

test('search by run number', async () => {
  const n = started['demo-settlement'];
  await page.goto('/admin/runs');
  await page.getByTestId('runs-filter-number').fill(`#${n}`);
  await page.getByTestId('runs-filter-number').press('Enter');
  await page.waitForURL((u) => u.searchParams.get('number') === String(n));
  await until('one row, the run', async () => JSON.stringify(await rowNumbers()) === JSON.stringify([n]));
  await page.getByTestId('runs-filter-number').fill('forty-two');
  await page.getByTestId('runs-filter-number').press('Enter');
  await page.getByText('A run number, such as 42 or #42').waitFor();
  assert.equal(new URL(page.url()).searchParams.get('number'), String(n), 'a bad number leaves the filter as it was');
});

test('a new run arrives live on a filtered page, without a reload', async () => {
  await page.goto('/admin/runs?job=demo-flaky');
  await page.getByTestId('runs-row').first().waitFor();
  await page.evaluate(() => {
    window.__e2eNoReload = true;
  });
  const n = await start('demo-flaky');
  await until(`run #${n} on the page`, async () => (await rowNumbers())[0] === n);
  assert.equal(await page.evaluate(() => window.__e2eNoReload), true, 'the page was reloaded');
  await waitEnded(n);
});

test('a run number opens the run; its time axis shows the lease renewals as they happen', async () => {
  const n = await start('demo-collect');
  await page.goto(`/admin/runs/${n}`);
  await page.getByTestId('run-title').filter({ hasText: `Run #${n}` }).waitFor();
  assert.match(page.url(), /\/admin\/runs\/[A-Za-z0-9+/=%]+$/, 'the URL now holds the global id');
  const axis = page.getByTestId('run-time-axis');
  await axis.waitFor();
  assert.equal(await axis.getAttribute('data-lanes'), '1');
  // The worker renews at half its lease; the axis shows each renewal as it is recorded, without
  // a reload.
  await page.evaluate(() => {
    window.__e2eNoReload = true;
  });
  await until('a lease renewal on the time axis', async () => Number(await axis.getAttribute('data-renewals')) >= 1, 60_000, 500);
  assert.equal(await page.evaluate(() => window.__e2eNoReload), true, 'the page was reloaded');
  const kinds = await page.getByTestId('run-timeline-mark').evaluateAll((m) => m.map((x) => x.getAttribute('data-kind')));
  assert.deepEqual(kinds.slice(0, 2), ['REQUESTED', 'ACTIVATED']);
  assert.ok(kinds.includes('LEASE_RENEWED'), `marks: ${kinds}`);
  await shot(page, 'runs-02-run-timeline-1280');
  // A number that is no run says so.
  await page.goto('/admin/runs/99999999');
  await page.getByText('No such run').waitFor();
});

test('a pause is on the time axis: requested by the operator, and the run ends paused', async () => {
  const n = started['demo-collect'];
  await page.goto(`/admin/runs/${n}`);
  await page.getByTestId('run-time-axis').waitFor();
  await gql(TOKENS.operator, `mutation { pauseJob(input: {name: "demo-collect"}) { userErrors { code } } }`);
  await until(`run #${n} to end PAUSED`, async () => (await runOf(n)).status === 'PAUSED', 60_000);
  const axis = page.getByTestId('run-time-axis');
  await until('the pause request and the end on the axis', async () => {
    const kinds = await page.getByTestId('run-timeline-mark').evaluateAll((m) => m.map((x) => x.getAttribute('data-kind')));
    return kinds.includes('PAUSE_REQUESTED') && kinds.at(-1) === 'FINISHED';
  });
  await axis.getByText('Ended paused').waitFor();
  await shot(page, 'runs-04-paused-timeline-1280');
  // Resuming the job continues the paused run with a RESUME run: the run to cancel next.
  const d = await gql(TOKENS.operator, `mutation { resumeJob(input: {name: "demo-collect"}) { run { number } userErrors { code } } }`);
  assert.ok(d.resumeJob.run, `resumeJob: ${JSON.stringify(d.resumeJob)}`);
  started['demo-collect'] = d.resumeJob.run.number;
});

test('cancel the selected runs from the runs page: one audit entry lists them', async () => {
  const n = started['demo-collect'];
  await page.goto('/admin/runs?status=STARTING,RUNNING');
  await until(`run #${n} listed as active`, async () => (await rowNumbers()).includes(n));
  const active = await rowNumbers();
  await page.getByTestId('runs-select-all').click();
  assert.equal(await page.getByTestId('runs-selected').textContent(), `${active.length} selected`);
  await shot(page, 'runs-03-selected-1280');
  await page.getByTestId('runs-cancel-selected').click();
  await page.getByTestId('runs-cancel-confirm').click();
  await page.getByText(new RegExp(`Cancel requested for ${active.length} run`)).waitFor();
  for (const m of active) await until(`run #${m} to end CANCELLED`, async () => (await runOf(m)).status === 'CANCELLED', 60_000);
  const audit = await gql(TOKENS.operator, `{ auditLog(first: 20) { nodes { action target outcome } } }`);
  const entries = audit.auditLog.nodes.filter((e) => e.action === 'cancelRuns');
  assert.equal(entries.length, 1, JSON.stringify(audit.auditLog.nodes));
  assert.equal(entries[0].target, `runs:${active.join(',')}`);
  assert.equal(entries[0].outcome, 'ok');
  // The run's time axis now shows the cancel request, by the operator.
  await page.goto(`/admin/runs/${n}`);
  await page.getByTestId('run-time-axis').waitFor();
  await until('the cancel request and the end on the axis', async () => {
    const kinds = await page.getByTestId('run-timeline-mark').evaluateAll((m) => m.map((x) => x.getAttribute('data-kind')));
    return kinds.includes('CANCEL_REQUESTED') && kinds.at(-1) === 'FINISHED';
  });
  await shot(page, 'runs-05-cancelled-timeline-1280');
});

test('on a phone the runs page and the time axis fit', async () => {
  const phone = await login(browser, 'viewer', { viewport: { width: 390, height: 844 } });
  await phone.goto('/admin/runs?job=demo-flaky');
  await phone.getByTestId('runs-row').first().waitFor();
  // A viewer may not cancel, and is told why.
  assert.ok(await phone.getByTestId('runs-cancel-selected').isDisabled());
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page is ${overflow}px wider than the screen`);
  await shot(phone, 'runs-06-list-390');
  await phone.goto(`/admin/runs/${started['demo-collect']}`);
  await phone.getByTestId('run-time-axis').waitFor();
  await shot(phone, 'runs-07-timeline-390');
  assert.deepEqual(phone.consoleErrors, []);
  await phone.context().close();
  assert.deepEqual(page.consoleErrors, []);
});
