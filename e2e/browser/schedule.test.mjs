// The job page's schedule editor in a real browser against `baton serve --demo` (see ../run.sh):
// on HIGH-risk demo-settlement a cron change saved by an operator becomes a SCHEDULE request and
// the schedule stays as it was until an approver approves the request in the Replays queue; the
// lease override box refuses a lease outside 1–86400 s, holds Save and saves nothing. The cron
// used fires once a year (Jan 1, 03:00), and the job's schedule is put back at the end. The tests
// run in order.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

const JOB = 'demo-settlement';
const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

let browser;
/** The schedule the job had before the tests, put back at the end. */
let original;
let newCron;

const jobQuery = `query($n: String!) { job(name: $n) { cron timezone enabled leaseSeconds riskLevel activeRun { id status } lastRun { id status } } }`;
const jobNow = async () => (await gql(TOKENS.viewer, jobQuery, { n: JOB })).job;

const updateSchedule = `mutation($input: UpdateJobScheduleInput!) { updateJobSchedule(input: $input) {
  job { cron } scheduleRequest { id status } userErrors { code field message } } }`;

before(async () => {
  browser = await launch();
  // A SCHEDULE request is judged by the job's last run: make one unless the job has one that ended.
  let job = await jobNow();
  if (!job.lastRun && !job.activeRun) {
    const d = await gql(TOKENS.operator, `mutation { startJob(input: {name: "${JOB}"}) { run { id } userErrors { code message } } }`);
    assert.ok(d.startJob.run, `startJob: ${JSON.stringify(d.startJob.userErrors)}`);
  }
  job = await until(
    `${JOB} to have an ended run and none active`,
    async () => {
      const j = await jobNow();
      return !j.activeRun && j.lastRun && TERMINAL.has(j.lastRun.status) ? j : null;
    },
    120_000,
    500,
  );
  assert.equal(job.riskLevel, 'HIGH');
  original = { cron: job.cron, timezone: job.timezone, enabled: job.enabled, leaseSeconds: job.leaseSeconds };
  newCron = job.cron === '0 3 1 1 *' ? '0 4 1 1 *' : '0 3 1 1 *';
});

after(async () => {
  if (original) {
    // Back to the schedule the job had; a change that makes it fire waits for an approver.
    const d = await gql(TOKENS.admin, updateSchedule, {
      input: { name: JOB, cron: original.cron, timezone: original.timezone, enabled: original.enabled, leaseSeconds: original.leaseSeconds ?? 0 },
    });
    const req = d.updateJobSchedule.scheduleRequest;
    if (req) await gql(TOKENS.approver, `mutation($id: ID!) { approveReplay(input: {requestId: $id}) { userErrors { code } } }`, { id: req.id });
  }
  await browser?.close();
  if (original) assert.equal((await jobNow()).cron, original.cron, `${JOB}'s schedule was not put back`);
});

test('an operator saves a new cron on HIGH-risk demo-settlement: it waits for a second person, nothing changes', async () => {
  const page = await login(browser, 'operator');
  await page.goto(`/admin/jobs/${JOB}`);
  const editor = page.getByTestId('schedule-editor');
  await editor.waitFor();
  const wordsBefore = await page.getByTestId('job-cron-words').innerText();

  await page.getByTestId('cron-input').fill(newCron);
  // The server's preview of the new cron: five fires, each on Jan 1 at 03:00 (or 04:00).
  const times = page.getByTestId('cron-preview-times').locator('li');
  await until('the preview of the new cron', async () => (await times.count()) === 5);
  const save = page.getByTestId('schedule-save');
  await until('Save to be enabled', async () => save.isEnabled());
  await save.click();

  const requested = page.getByTestId('schedule-requested');
  await requested.waitFor();
  const text = await requested.innerText();
  assert.match(text, /Not changed yet: waiting for a second person/);
  assert.match(text, /HIGH risk/);
  assert.match(text, /APPROVAL_REQUIRED/);
  assert.match(text, /schedule request #\d+ \(PENDING_APPROVAL\)/);
  assert.match(text, /Replays/);
  // The page still shows the old schedule, and so does the API.
  assert.equal(await page.getByTestId('job-cron-words').innerText(), wordsBefore);
  assert.equal((await jobNow()).cron, original.cron, 'the cron changed before any approval');
  await shot(page, 'sched-01-request-waits-1280');

  // Its requester sees the request in the queue, and cannot approve it.
  await page.goto('/admin/replays');
  const card = page.getByTestId('replay-request-card').filter({ has: page.getByTestId('schedule-change').filter({ hasText: newCron }) });
  await card.first().waitFor();
  assert.equal(await card.count(), 1);
  assert.equal(await card.getAttribute('data-kind'), 'SCHEDULE');
  assert.equal(await card.getAttribute('data-requested-by'), 'e2e-operator');
  assert.equal(await card.getByTestId('replay-approve').isDisabled(), true, 'the requester can approve their own request');
  assert.equal(await card.getByTestId('replay-reject').isDisabled(), true, 'the requester can reject their own request');

  await page.goto(`/admin/jobs/${JOB}`);
  await page.getByTestId('schedule-editor').waitFor();
  assert.equal(await page.getByTestId('cron-input').inputValue(), original.cron, 'the editor shows a cron that was not applied');
  assert.equal(page.consoleErrors.length, 0, `console errors: ${page.consoleErrors.join('\n')}`);
  await page.context().close();
});

test('an approver sees the SCHEDULE request with its change in the Replays queue and approves it; the job page shows the new cron', async () => {
  const page = await login(browser, 'approver');
  await page.goto('/admin/replays');
  const card = page
    .getByTestId('replay-request-card')
    .filter({ has: page.getByTestId('replay-kind-schedule') })
    .filter({ has: page.getByTestId('schedule-change').filter({ hasText: newCron }) });
  await card.first().waitFor();
  assert.equal(await card.count(), 1);
  assert.equal(await card.getAttribute('data-status'), 'PENDING_APPROVAL');
  assert.equal(await card.getAttribute('data-requested-by'), 'e2e-operator');
  assert.match(await card.getByTestId('schedule-change').innerText(), new RegExp(`Change: cron ${newCron.replaceAll('*', '\\*')}`));
  assert.match(await card.innerText(), new RegExp(JOB));
  const approve = card.getByTestId('replay-approve');
  assert.equal(await approve.isEnabled(), true, 'an approver other than the requester cannot approve');
  await card.getByTestId('decision-note').fill('e2e: once a year at night');
  await shot(page, 'sched-02-queue-approver');

  await approve.click();
  await page.getByText('Schedule change approved: it is applied').waitFor();
  await until('the request to leave the queue of pending requests', async () => (await card.count()) === 0);
  assert.equal((await jobNow()).cron, newCron);

  await page.goto(`/admin/jobs/${JOB}`);
  await page.getByTestId('schedule-editor').waitFor();
  const summary = page.getByTestId('job-cron-words').locator('..');
  await until('the job page to show the new cron', async () => (await summary.innerText()).includes(newCron));
  assert.equal(await page.getByTestId('cron-input').inputValue(), newCron);
  const fires = await page.getByTestId('next-fires').locator('li').allInnerTexts();
  assert.equal(fires.length, 5, `next fires: ${fires}`);
  await shot(page, 'sched-03-applied');
  assert.equal(page.consoleErrors.length, 0, `console errors: ${page.consoleErrors.join('\n')}`);
  await page.context().close();
});

test('the lease override refuses -5 and 99999999999, naming 1–86400, holds Save, and saves nothing', async () => {
  const page = await login(browser, 'operator');
  await page.goto(`/admin/jobs/${JOB}`);
  await page.getByTestId('schedule-editor').waitFor();
  const lease = page.getByTestId('lease-input');
  const before = await lease.inputValue();
  const save = page.getByTestId('schedule-save');
  const reason = page.locator('[data-disabled-reason]').filter({ has: save });

  for (const typed of ['-5', '99999999999']) {
    await lease.fill(typed);
    const error = page.getByTestId('lease-error');
    await until(`the refusal of ${typed}`, async () => (await error.innerText().catch(() => '')).includes(`not ${typed}`));
    const msg = await error.innerText();
    assert.match(msg, /INVALID_INPUT/);
    assert.match(msg, /leaseSeconds must be a whole number between 1 and 86400/);
    assert.equal(await lease.inputValue(), typed, 'the box changed what was typed');
    assert.equal(await save.isDisabled(), true, `Save is enabled with a lease of ${typed}`);
    const why = await reason.getAttribute('data-disabled-reason');
    assert.match(why, /^Fix the lease override first: leaseSeconds must be a whole number between 1 and 86400/);
    assert.match(why, new RegExp(`not ${typed}`));
    if (typed === '-5') await shot(page, 'sched-04a-lease-refused-negative');
  }
  await shot(page, 'sched-04-lease-refused');
  assert.equal((await jobNow()).leaseSeconds, original.leaseSeconds);

  await page.reload();
  await page.getByTestId('schedule-editor').waitFor();
  assert.equal(await page.getByTestId('lease-input').inputValue(), before, 'the lease changed');
  assert.equal(page.consoleErrors.length, 0, `console errors: ${page.consoleErrors.join('\n')}`);
  await page.context().close();
});
