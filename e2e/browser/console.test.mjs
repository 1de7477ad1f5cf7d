// The admin console in a real browser against a real `baton serve --demo` (see ../run.sh).
// The tests share one server and run in order: later ones use what earlier ones left.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { BASE, launch, login, runIdFromURL, shot, statusOf, TOKENS, until } from './helpers.mjs';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED']);
let browser;
/** Pages kept across tests, per role. */
const pages = {};
/** The demo-collect run cancelled, and its last checkpoint. */
const cancelled = { id: '', checkpoint: '' };

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

test('the login page refuses a bad token and accepts a good one; the role is shown', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: BASE });
  const page = await context.newPage();
  await page.goto('/admin/jobs/demo-collect');
  await page.getByTestId('login-token').fill('not-a-token');
  await page.getByTestId('login-submit').click();
  await page.getByRole('alert').filter({ hasText: 'did not accept' }).waitFor();
  await shot(page, '01-login');
  await page.getByTestId('login-token').fill(TOKENS.admin);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('viewer-role').waitFor();
  assert.equal(await page.getByTestId('viewer-role').getAttribute('data-role'), 'ADMIN');
  // The deep link survives the login.
  await page.getByTestId('job-name').filter({ hasText: 'demo-collect' }).waitFor();
  await context.close();

  pages.operator = await login(browser, 'operator');
  await pages.operator.getByTestId('job-card-demo-collect').waitFor();
  // The dashboard reads the jobs connection a page at a time: the demo's jobs fit on the first
  // page, so it shows no pager.
  await pages.operator.getByTestId('job-card-demo-settlement').waitFor();
  assert.equal(await pages.operator.getByRole('navigation', { name: 'jobs pages' }).count(), 0, 'a pager for one page of jobs');
  assert.match(await pages.operator.getByTestId('viewer-role').textContent(), /e2e-operator · operator/);
});

test('start demo-collect: the progress bar advances without a reload', async () => {
  const page = pages.operator;
  await page.evaluate(() => {
    window.__e2eNoReload = true;
  });
  const card = page.getByTestId('job-card-demo-collect');
  // serve --demo schedules demo-collect every 15 minutes: switch the schedule off (the
  // dashboard's toggle), and stop a scheduled run that may have fired.
  const enabled = card.getByTestId('enabled-demo-collect');
  if (await enabled.isChecked()) {
    await enabled.uncheck();
    await until('the schedule to be off', async () => !(await enabled.isChecked()) && /schedule off/.test(await card.innerText()));
  }
  if (await card.getByTestId('cancel-demo-collect').isEnabled()) {
    await card.getByTestId('cancel-demo-collect').click();
  }
  // After a run that finished its generation the main action is Run again (a RESTART, through
  // its confirmation); after one that stopped short, Resume.
  const runAgain = async () => (await card.getByTestId('restart-demo-collect').getAttribute('data-run-again')) === 'true';
  await until('demo-collect to be startable', async () => (await card.getByTestId('resume-demo-collect').isEnabled()) || ((await runAgain()) && card.getByTestId('restart-demo-collect').isEnabled()), 30_000);
  if (await card.getByTestId('resume-demo-collect').isEnabled()) {
    await card.getByTestId('resume-demo-collect').click();
  } else {
    await card.getByTestId('restart-demo-collect').click();
    await page.getByTestId('restart-confirm').click();
  }
  const bar = card.getByTestId('run-progress');
  const seen = new Set();
  await until(
    'three distinct progress values on the dashboard',
    async () => {
      const status = await bar.getAttribute('data-status').catch(() => null);
      const v = await bar.getAttribute('data-processed').catch(() => null);
      if (status === 'RUNNING' && v !== null && v !== '0') seen.add(v);
      return seen.size >= 3;
    },
    60_000,
    150,
  );
  assert.equal(await page.evaluate(() => window.__e2eNoReload), true, 'the page was reloaded');
  const pct = Number(await bar.getAttribute('data-percent'));
  assert.ok(pct > 0 && pct < 100, `percent ${pct} should be between 0 and 100`);
  await shot(page, '02-dashboard-running');
});

test('cancel shows CANCELLED; the run page is live (sparkline, ETA, lease)', async () => {
  const page = pages.operator;
  await page.getByTestId('job-card-demo-collect').getByTestId('run-link-demo-collect').click();
  await page.getByTestId('run-title').waitFor();
  cancelled.id = runIdFromURL(page.url());
  assert.ok(cancelled.id, `no run id in ${page.url()}`);
  const progress = page.getByTestId('run-progress');
  const before = Number(await progress.getAttribute('data-processed'));
  await until('the run page to advance', async () => Number(await progress.getAttribute('data-processed')) > before + 2, 30_000);
  await until('the sparkline to have points', async () => Number(await page.getByTestId('sparkline').getAttribute('data-points')) >= 2, 15_000);
  assert.match(await page.getByTestId('run-eta').innerText(), /about|stalled/);
  assert.match(await page.getByTestId('run-lease').innerText(), /ends in|expired/);
  assert.match(await page.getByTestId('run-lease').innerText(), /e2e-1/);
  await shot(page, '03-run-live');

  await page.getByTestId('run-cancel').click();
  const status = page.getByTestId('run-status');
  await until('CANCELLED', async () => (await statusOf(status)) === 'CANCELLED', 30_000);
  assert.match(await status.textContent(), /Cancelled/);
  // The server's FINISHED event in the timeline: the page has reloaded the final state.
  await until('the timeline to show the end', async () => /Finished/.test(await page.getByTestId('run-timeline').innerText()), 15_000);
  cancelled.checkpoint = (await page.getByTestId('run-checkpoint').innerText()).trim();
  assert.match(cancelled.checkpoint, /p\d+$/, 'the cancelled run has a checkpoint');
  await shot(page, '04-run-cancelled');
});

test('Resume continues from the checkpoint', async () => {
  const page = pages.operator;
  await page.getByTestId('run-resume').click();
  await until('the new run page', async () => {
    const id = runIdFromURL(page.url());
    return id && id !== cancelled.id;
  });
  await page.getByTestId('run-title').waitFor();
  const startCheckpoint = page.getByTestId('run-start-checkpoint');
  let shown = '';
  await until(`the new run to start from ${cancelled.checkpoint} (shown: ${shown})`, async () => {
    shown = (await startCheckpoint.innerText()).trim();
    return shown === cancelled.checkpoint;
  }).catch((e) => assert.fail(`${e.message}; the page shows start checkpoint ${shown}`));
  const resumedFrom = await page.getByTestId('resumed-from').innerText();
  assert.match(resumedFrom, /Continues run #\d+/);
  const progress = page.getByTestId('run-progress');
  await until('the resumed run to make progress', async () => Number(await progress.getAttribute('data-processed')) > 0, 30_000);
  // It resumes, not restarts: its total is what was left, less than the 300 pages.
  const total = await page.getByTestId('run-percent').evaluate((el) => el.parentElement?.innerText ?? '');
  assert.doesNotMatch(total, /\/ 300 processed/);
  await shot(page, '05-run-resumed');
  // Leave the cluster quiet for the next tests.
  await page.getByTestId('run-cancel').click();
  await until('the resumed run to stop', async () => TERMINAL.has(await statusOf(page.getByTestId('run-status'))), 30_000);
});

test('edit cron: the next fire times change; an invalid cron shows its error', async () => {
  const page = pages.operator;
  await page.goto('/admin/jobs/demo-collect');
  const fires = page.getByTestId('next-fires');
  await fires.waitFor();
  const before = await fires.innerText();

  await page.getByTestId('cron-input').fill('0 0 4 * * *');
  await page.getByTestId('schedule-enabled').check();
  await page.getByTestId('timezone-select').click();
  await page.getByTestId('timezone-select').fill('Asia/Seoul');
  await page.getByRole('option', { name: 'Asia/Seoul', exact: true }).click();
  await page.getByTestId('cron-preview-times').waitFor();
  assert.equal(await page.getByTestId('cron-preview-words').innerText(), 'every day at 04:00, Asia/Seoul');
  await page.getByTestId('schedule-save').click();
  await until('the next fire times to change', async () => (await fires.innerText()) !== before);
  const after = await fires.innerText();
  assert.equal(after.trim().split('\n').length, 5, `five fire times, got: ${after}`);
  assert.match(after, /04:00:00/);
  await until('the schedule in words', async () => (await page.getByTestId('job-cron-words').innerText()) === 'every day at 04:00, Asia/Seoul');

  // A second edit moves them again.
  await page.getByTestId('cron-input').fill('0 30 6 * * 1-5');
  await page.getByTestId('cron-preview-times').waitFor();
  await page.getByTestId('schedule-save').click();
  await until('the next fire times to move to 06:30', async () => /06:30:00/.test(await fires.innerText()));

  await page.getByTestId('cron-input').fill('61 * * * *');
  const err = page.getByTestId('cron-error');
  await err.waitFor();
  assert.match(await err.innerText(), /cron expression is not valid/);
  assert.match(await err.innerText(), /INVALID_CRON/);
  assert.equal(await page.getByTestId('schedule-save').isDisabled(), true, 'an invalid cron cannot be saved');
  await shot(page, '06-job-cron-invalid');
  await page.getByTestId('cron-input').fill('0 30 6 * * 1-5');
  await shot(page, '07-job');
});

test('an operator requests a replay of demo-settlement; an approver approves it; the replay run appears', async () => {
  const op = pages.operator;
  await op.goto('/admin/');
  const card = op.getByTestId('job-card-demo-settlement');
  // A terminal run of demo-settlement to replay: make one unless its last run finished its
  // generation (then Resume is off, with nothing to resume, and that run is the source).
  const resume = card.getByTestId('resume-demo-settlement');
  await until('demo-settlement to be idle', async () => (await resume.isEnabled()) || (await card.getByTestId('restart-demo-settlement').getAttribute('data-run-again')) === 'true', 60_000);
  if (await resume.isEnabled()) await resume.click();
  const status = card.getByTestId('run-status-demo-settlement');
  await until('demo-settlement to finish', async () => TERMINAL.has(await statusOf(status).catch(() => null)), 90_000, 250);
  await card.getByTestId('run-link-demo-settlement').click();
  await op.getByTestId('run-title').waitFor();
  const sourceRun = runIdFromURL(op.url());
  await op.getByTestId('run-replay-link').click();
  await op.getByTestId('preflight').waitFor();
  await op.getByTestId('replay-scope').getByText('Full', { exact: true }).click();
  const preflight = op.getByTestId('preflight');
  await until('the FULL preflight', async () => (await op.getByTestId('preflight').innerText()).includes('FULL'));

  if ((await preflight.getAttribute('data-blocked')) === 'true') {
    // Blocked (an ambiguous payment, most likely): the reasons are shown in words...
    const reasons = await op.getByTestId('blocking-reason').allInnerTexts();
    assert.ok(reasons.length > 0 && reasons.every((r) => r.length > 10), `blocking reasons: ${reasons}`);
    await shot(op, '08-replay-blocked');
    const ambiguous = Number(await op.getByTestId('pf-ambiguous').innerText());
    if (ambiguous > 0) {
      // ...and the ambiguous queue settles them through the job's reconcile hook.
      await op.goto('/admin/ambiguous');
      const queue = op.getByTestId('ambiguous-demo-settlement');
      await queue.getByTestId('ambiguous-row').first().waitFor();
      await shot(op, '09-ambiguous-queue');
      // A worker asks the hook: the row shows "reconciling…", then leaves the queue, live.
      while ((await queue.getByTestId('reconcile').count()) > 0) {
        const n = await queue.getByTestId('ambiguous-row').count();
        await queue.getByTestId('reconcile').first().click();
        await until('the entry to leave the queue', async () => (await queue.getByTestId('ambiguous-row').count()) < n, 15_000);
      }
    }
    // A reconcile may run briefly as a run of the job: recompute until nothing blocks.
    await op.goto(`/admin/runs/${encodeURIComponent(sourceRun)}/replay`);
    await op.getByTestId('replay-scope').getByText('Full', { exact: true }).click();
    await until(
      'the FULL preflight to clear',
      async () => {
        const pf = op.getByTestId('preflight');
        if ((await pf.innerText()).includes('FULL') && (await pf.getAttribute('data-blocked')) === 'false') return true;
        await op.getByRole('button', { name: 'Recompute' }).click();
        return false;
      },
      30_000,
      1000,
    );
  }
  assert.equal(await preflight.getAttribute('data-blocked'), 'false', `still blocked: ${(await op.getByTestId('blocking-reason').allInnerTexts()).join('; ')}`);
  assert.equal(await preflight.getAttribute('data-requires-approval'), 'true', 'a HIGH-risk replay needs approval');
  assert.match(await op.getByTestId('preflight-approval').innerText(), /HIGH-risk/);
  const checks = await op.getByTestId('preflight-checks').locator('tbody tr').count();
  assert.ok(checks >= 2, `preflight checks: ${checks}`);

  assert.equal(await op.getByTestId('replay-request').isDisabled(), true, 'no request without a reason');
  await op.getByTestId('replay-reason').fill('e2e: re-walk the settlement after the provider incident');
  assert.equal(await op.getByTestId('replay-request').isDisabled(), true, 'HIGH risk needs a compensation reference');
  await op.getByTestId('replay-compensation').fill('OPS-E2E-1');
  await op.getByTestId('replay-request').click();
  const outcome = op.getByTestId('replay-outcome');
  await outcome.waitFor();
  assert.equal(await outcome.getAttribute('data-status'), 'PENDING_APPROVAL');
  await shot(op, '10-replay-requested');

  // The requester cannot approve (operator role; and never one's own request).
  await op.goto('/admin/replays');
  const mine = op.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-1' });
  await mine.waitFor();
  assert.equal(await mine.getByTestId('replay-approve').isDisabled(), true);

  const approver = await login(browser, 'approver');
  pages.approver = approver;
  await approver.goto('/admin/replays');
  const req = approver.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-1' });
  await req.waitFor();
  assert.equal(await req.getAttribute('data-status'), 'PENDING_APPROVAL');
  assert.equal(await req.getAttribute('data-requested-by'), 'e2e-operator');
  await shot(approver, '11-approval-queue');
  await req.getByTestId('decision-note').fill('checked the compensation plan');
  await req.getByTestId('replay-approve').click();
  await approver.getByText('Replay approved').waitFor();
  await approver.getByTestId('replays-filter-EXECUTED').click();
  const executed = approver.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-1' });
  await executed.getByTestId('replay-run-link').waitFor();
  assert.equal(await executed.getAttribute('data-status'), 'EXECUTED');
  await shot(approver, '12-replay-executed');
  await executed.getByTestId('replay-run-link').click();
  await approver.getByTestId('run-title').waitFor();
  const replayRun = runIdFromURL(approver.url());
  assert.ok(replayRun && replayRun !== sourceRun, 'the replay run is a new run');
  await until('the replay run page', async () => /Replay/.test(await approver.locator('main').innerText()));
  await shot(approver, '13-replay-run');
});

test('a RESTART of demo-settlement (HIGH risk) is a request: an approver approves it; the RESTART run appears', async () => {
  const op = pages.operator;
  const openRestart = async () => {
    await op.goto('/admin/');
    const card = op.getByTestId('job-card-demo-settlement');
    await card.getByTestId('restart-demo-settlement').click();
    await op.locator('[data-testid=restart-needs-approval], [data-testid=restart-blocked]').first().waitFor();
    return (await op.getByTestId('restart-blocked').count()) > 0;
  };
  if (await openRestart()) {
    // Targets in doubt block the RESTART outright: settle them, then ask again.
    await shot(op, '13a-restart-blocked');
    await op.goto('/admin/ambiguous');
    const queue = op.getByTestId('ambiguous-demo-settlement');
    while ((await queue.getByTestId('reconcile').count()) > 0) {
      const n = await queue.getByTestId('reconcile').count();
      await queue.getByTestId('reconcile').first().click();
      await until('the entry to leave the queue', async () => (await queue.getByTestId('reconcile').count()) < n, 15_000);
    }
    await until('the RESTART preflight to clear', async () => !(await openRestart()), 30_000, 1000);
  }
  assert.match(await op.getByTestId('restart-needs-approval').innerText(), /HIGH-risk/);
  assert.equal(await op.getByTestId('restart-request').isDisabled(), true, 'no request without a reason');
  await op.getByTestId('restart-reason').fill('e2e: a new settlement date');
  assert.equal(await op.getByTestId('restart-request').isDisabled(), true, 'HIGH risk needs a compensation reference');
  await op.getByTestId('restart-compensation').fill('OPS-E2E-2');
  await shot(op, '13b-restart-request');
  await op.getByTestId('restart-request').click();
  await until('the approval queue', async () => op.url().endsWith('/admin/replays'));
  const mine = op.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-2' });
  await mine.waitFor();
  assert.equal(await mine.getAttribute('data-kind'), 'RESTART');
  assert.equal(await mine.getAttribute('data-status'), 'PENDING_APPROVAL');
  assert.equal(await mine.getByTestId('replay-approve').isDisabled(), true);

  const approver = pages.approver;
  await approver.goto('/admin/replays');
  const req = approver.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-2' });
  await req.waitFor();
  await req.getByTestId('replay-kind-restart').waitFor();
  await req.getByTestId('decision-note').fill('new date confirmed with finance');
  await req.getByTestId('replay-approve').click();
  await approver.getByText('Restart approved').waitFor();
  await approver.getByTestId('replays-filter-EXECUTED').click();
  const executed = approver.getByTestId('replay-request-card').filter({ hasText: 'OPS-E2E-2' });
  await executed.getByTestId('replay-run-link').waitFor();
  await shot(approver, '13c-restart-executed');
  await executed.getByTestId('replay-run-link').click();
  await approver.getByTestId('run-title').waitFor();
  await until('the RESTART run page', async () => /RESTART/.test(await approver.locator('main').innerText()));
});

test('a viewer sees no enabled mutation buttons', async () => {
  const page = await login(browser, 'viewer');
  const visit = async (url, ready, name) => {
    await page.goto(url);
    await page.getByTestId(ready).first().waitFor();
    const buttons = page.locator('[data-mutation]');
    const n = await buttons.count();
    const enabled = [];
    for (let i = 0; i < n; i++) {
      if (await buttons.nth(i).isEnabled()) enabled.push(await buttons.nth(i).evaluate((el) => el.outerHTML.slice(0, 120)));
    }
    assert.deepEqual(enabled, [], `${url}: enabled mutation controls for a viewer`);
    if (name) await shot(page, name);
    return n;
  };
  const onDashboard = await visit('/admin/', 'job-card-demo-collect', '14-viewer-dashboard');
  assert.ok(onDashboard >= 15, `the dashboard should show its mutation controls (disabled), saw ${onDashboard}`);
  const reasons = await page.locator('[data-disabled-reason]').first().getAttribute('data-disabled-reason');
  assert.equal(reasons, 'Needs the operator role; you are a viewer.');
  await visit('/admin/jobs/demo-settlement', 'schedule-save');
  await visit(`/admin/runs/${encodeURIComponent(cancelled.id)}`, 'run-cancel');
  await visit(`/admin/runs/${encodeURIComponent(cancelled.id)}/replay`, 'replay-request');
  await page.goto('/admin/replays');
  await page.getByTestId('replays-filter-EXECUTED').click();
  await page.getByTestId('replay-request-card').first().waitFor();
  assert.equal(await page.locator('[data-mutation]:enabled').count(), 0);
  await page.goto('/admin/audit');
  await page.getByText('The audit log is for operators').waitFor();
  await page.context().close();
});

test('alerts, audit log, playground and maintenance; dark mode and tablet width', async () => {
  const page = pages.operator;
  await page.goto('/admin/alerts');
  await page.locator('[data-testid=alert-card], [data-testid=empty]').first().waitFor();
  const badge = await page.getByTestId('alerts-badge').getAttribute('data-count');
  assert.ok(Number(badge) >= 0);
  await shot(page, '15-alerts');

  await page.goto('/admin/audit');
  const audit = page.getByTestId('audit-table');
  await audit.waitFor();
  const text = await audit.innerText();
  for (const action of ['startJob', 'cancelRun', 'updateJobSchedule', 'requestReplay']) assert.match(text, new RegExp(action));
  assert.match(text, /e2e-operator/);
  await shot(page, '16-audit');

  await page.goto('/playground');
  await page.getByTestId('playground').waitFor();
  await page.locator('.graphiql-container').waitFor();
  await page.locator('.graphiql-execute-button').waitFor();
  await until(
    'the playground to answer',
    async () => {
      if (/"me"/.test(await page.locator('.graphiql-response').innerText().catch(() => ''))) return true;
      await page.locator('.graphiql-execute-button').click();
      return false;
    },
    20_000,
    1000,
  );
  await shot(page, '17-playground');

  const dark = await login(browser, 'admin', { colorScheme: 'dark' });
  await dark.getByTestId('job-card-demo-collect').waitFor();
  await shot(dark, '18-dashboard-dark');
  await dark.goto(`/admin/runs/${encodeURIComponent(cancelled.id)}`);
  await dark.getByTestId('run-title').waitFor();
  await shot(dark, '19-run-dark');
  await dark.context().close();

  const tablet = await login(browser, 'operator', { viewport: { width: 820, height: 1180 } });
  await tablet.getByTestId('job-card-demo-collect').waitFor();
  const overflow = await tablet.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 1, `the dashboard scrolls sideways at tablet width by ${overflow}px`);
  await shot(tablet, '20-dashboard-tablet');
  await tablet.goto('/admin/jobs/demo-collect');
  await tablet.getByTestId('next-fires').waitFor();
  await shot(tablet, '21-job-tablet');
  await tablet.context().close();

  // The maintenance switch: confirm, banner, starts refused with the reason; then lift it.
  await page.goto('/admin/');
  const flaky = page.getByTestId('job-card-demo-flaky');
  await flaky.waitFor();
  await page.getByTestId('maintenance-switch').click(); // opens the confirmation; the switch flips once confirmed
  await page.getByTestId('maintenance-confirm').click();
  await page.getByTestId('maintenance-banner').waitFor();
  await until('starts to be refused', async () => !(await flaky.getByTestId('restart-demo-flaky').isEnabled()));
  assert.match(await flaky.locator('[data-disabled-reason]').first().getAttribute('data-disabled-reason'), /Maintenance is on/);
  await shot(page, '22-maintenance');
  await page.getByTestId('maintenance-switch').click();
  await page.getByTestId('maintenance-banner').waitFor({ state: 'detached' });
  await until('starts to be allowed again', async () => flaky.getByTestId('restart-demo-flaky').isEnabled());

  const errors = page.consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(e));
  assert.deepEqual(errors, [], 'console errors on the operator page');
});
