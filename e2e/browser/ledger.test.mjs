// Target history, bulk actions in the ambiguous queue, the hand-resolution form, and the
// replay page for an unknown run, against a real `baton serve --demo` (see ../run.sh).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';

import { BASE, gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});


function psql(sql) {
  assert.ok(process.env.E2E_DATABASE_URL, 'E2E_DATABASE_URL is unset: run the browser tests through e2e/run.sh');
  return execFileSync('psql', [process.env.E2E_DATABASE_URL, '-qAtXv', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' }).trim();
}

const JOB = 'demo-settlement';
/** The targets put in doubt for the queue's tests. */
let doubted = [];

test('setup: a settlement run, then four of its payments in doubt (as a worker dying after the call leaves them)', async () => {
  const started = await gql(TOKENS.operator, `mutation { startJob(input: {name: "${JOB}"}) { run { id } userErrors { code message } } }`);
  // A scheduled run may have fired first: follow it instead.
  const run = started.startJob.run ?? (await gql(TOKENS.viewer, `{ job(name: "${JOB}") { activeRun { id } } }`)).job.activeRun;
  assert.ok(run, `startJob: ${JSON.stringify(started.startJob.userErrors)}`);
  await until(
    'the settlement run to end',
    async () => {
      const d = await gql(TOKENS.viewer, `query($id: ID!) { run(id: $id) { status } }`, { id: run.id });
      return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(d.run.status);
    },
    90_000,
    500,
  );
  // The worker died between the call and its result, four times: the payments are in doubt.
  // The counters move with the rows, as the runner's own settle does.
  const keys = psql(`WITH picked AS (
      SELECT id FROM job_ledger WHERE job_name = '${JOB}' AND state = 'CONFIRMED'
      AND generation = (SELECT max(generation) FROM job_ledger WHERE job_name = '${JOB}') ORDER BY id LIMIT 4),
    moved AS (UPDATE job_ledger l SET state = 'AMBIGUOUS_EFFECT', last_error = 'e2e: worker died after the call'
      FROM picked WHERE l.id = picked.id RETURNING l.target_key, l.generation),
    c AS (INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
      SELECT '${JOB}', max(generation), 0, s.state, s.d * count(*) FROM moved, (VALUES ('CONFIRMED', -1), ('AMBIGUOUS_EFFECT', 1)) AS s(state, d)
      GROUP BY s.state, s.d
      ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n)
    SELECT string_agg(target_key, ',' ORDER BY target_key) FROM moved`);
  doubted = keys.split(',').filter(Boolean);
  assert.equal(doubted.length, 4, `targets put in doubt: ${keys}`);
});

test('resolving as NOT_APPLIED needs a note: the form marks it required and holds the button', async () => {
  const page = await login(browser, 'operator');
  await page.goto('/admin/ambiguous');
  const queue = page.getByTestId(`ambiguous-${JOB}`);
  // The run may have left payments of its own in doubt too: the tests act on the four.
  const row = queue.getByTestId('ambiguous-row').filter({ hasText: doubted[0] });
  await row.waitFor();
  await row.getByTestId('resolve').click();
  await page.getByTestId('resolve-not-applied').click();
  const submit = page.getByTestId('resolve-submit');
  assert.equal(await submit.isDisabled(), true, 'NOT_APPLIED without a note can be sent');
  assert.equal(await page.getByTestId('resolve-note').getAttribute('required'), '', 'the note is not marked required');
  const held = page.getByRole('dialog').locator('[data-disabled-reason]');
  assert.match(await held.getAttribute('data-disabled-reason'), /note/);
  await shot(page, 'lb-01-resolve-note-required');
  await page.getByTestId('resolve-note').fill('e2e: provider has no record');
  assert.equal(await submit.isDisabled(), false, 'a noted NOT_APPLIED cannot be sent');
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  // On a phone the queue scrolls sideways inside its card; the bulk bar stays on screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await row.getByTestId('select-row').check();
  await until('one selected', async () => /1 selected/.test(await queue.getByTestId('bulk-actions').innerText()));
  assert.equal(await queue.getByTestId('bulk-resolve').isDisabled(), false);
  await shot(page, 'lb-01b-queue-selected-390');
  await page.context().close();
});

test('bulk: resolve two selected targets with one note, reconcile one selected, then reconcile all; one audit entry each', async () => {
  const page = await login(browser, 'operator');
  await page.goto('/admin/ambiguous');
  const queue = page.getByTestId(`ambiguous-${JOB}`);
  const row = (i) => queue.getByTestId('ambiguous-row').filter({ hasText: doubted[i] });
  const gone = async (...is) => {
    for (const i of is) if ((await row(i).count()) > 0) return false;
    return true;
  };
  await row(3).waitFor();
  await row(0).getByTestId('select-row').check();
  await row(1).getByTestId('select-row').check();
  await until('two selected', async () => /2 selected/.test(await queue.getByTestId('bulk-actions').innerText()));
  await shot(page, 'lb-02-queue-selected');
  await queue.getByTestId('bulk-resolve').click();
  assert.match(await page.getByTestId('resolve-members').innerText(), new RegExp(`${doubted[0]}, ${doubted[1]}`));
  await page.getByTestId('resolve-not-applied').click();
  await page.getByTestId('resolve-note').fill('e2e: the provider shows neither payment');
  await page.getByTestId('resolve-submit').click();
  await until('the two resolved targets to leave the queue', async () => gone(0, 1), 15_000);
  assert.equal(await row(2).count(), 1, 'an unselected target left the queue');

  await row(2).getByTestId('select-row').check();
  await queue.getByTestId('bulk-reconcile').click();
  await until('the selected target to be reconciled', async () => gone(2), 30_000);
  assert.equal(await row(3).count(), 1, 'an unselected target was reconciled');
  await queue.getByTestId('reconcile-all').click();
  await until('reconcile all to settle the last one', async () => (await page.getByTestId(`ambiguous-${JOB}`).count()) === 0 || gone(3), 30_000);
  await shot(page, 'lb-03-queue-settled');

  const audit = await gql(TOKENS.admin, `{ auditLog(first: 50) { nodes { action outcome target arguments } } }`);
  const many = audit.auditLog.nodes.filter((n) => n.action === 'resolveAmbiguousMany');
  assert.equal(many.length, 1, `resolveAmbiguousMany audit rows: ${JSON.stringify(many)}`);
  assert.equal(many[0].arguments.done.length, 2, 'the bulk audit entry lists both members');
  const reconciles = audit.auditLog.nodes.filter((n) => n.action === 'reconcileMany');
  assert.equal(reconciles.length, 2, `reconcileMany audit rows: ${JSON.stringify(reconciles)}`);
  await page.context().close();
});

test('targets are links to their history across runs and generations', async () => {
  for (const [viewport, tag] of [
    [{ width: 1280, height: 900 }, '1280'],
    [{ width: 390, height: 844 }, '390'],
  ]) {
    const page = await login(browser, 'operator', { viewport });
    await page.goto(`/admin/jobs/${JOB}`);
    await page.getByRole('tab', { name: 'Ledger' }).click();
    const link = page.getByTestId('ledger-table').getByTestId('target-link').filter({ hasText: doubted[0] });
    await page.getByTestId('ledger-search').fill(doubted[0]);
    await link.first().waitFor();
    await link.first().click();
    await page.getByTestId('target-page').waitFor();
    assert.equal((await page.getByTestId('target-key').innerText()).trim(), doubted[0]);
    assert.ok(page.url().endsWith(`/targets/${encodeURIComponent(doubted[0])}`), page.url());
    // Entries are oldest first, one per generation: the newest is the one the bulk test settled
    // (resolved NOT_APPLIED, or reconciled CONFIRMED, by the queue's order).
    const newest = (
      await gql(TOKENS.viewer, `query($k: String!) { target(jobName: "${JOB}", targetKey: $k) { entries { nodes { state } } } }`, { k: doubted[0] })
    ).target.entries.nodes.at(-1);
    assert.ok(['NOT_APPLIED', 'CONFIRMED'].includes(newest.state), `the doubted target is ${newest.state}`);
    const entry = page.getByTestId('target-entry').last();
    await entry.waitFor();
    const text = await entry.innerText();
    assert.match(text, new RegExp(newest.state === 'NOT_APPLIED' ? 'Not applied|NOT_APPLIED' : 'CONFIRMED', 'i'), `entry row: ${text}`);
    await shot(page, `lb-04-target-history-${tag}`);
    // An unknown target says so.
    await page.goto(`/admin/jobs/${JOB}/targets/${encodeURIComponent('no such/target?')}`);
    await page.getByText('No such target').waitFor();
    await page.context().close();
  }
});

test('the replay page of an unknown run says there is no such run, with a way on', async () => {
  for (const [viewport, tag] of [
    [{ width: 1280, height: 900 }, '1280'],
    [{ width: 390, height: 844 }, '390'],
  ]) {
    const page = await login(browser, 'operator', { viewport });
    for (const id of [Buffer.from('Run:999999').toString('base64'), 'not-an-id']) {
      await page.goto(`/admin/runs/${encodeURIComponent(id)}/replay`);
      const nf = page.getByTestId('replay-not-found');
      await nf.waitFor();
      assert.match(await nf.innerText(), /No such run/);
      assert.doesNotMatch(await page.locator('main').innerText(), /request failed/i);
    }
    await shot(page, `lb-05-replay-unknown-run-${tag}`);
    await page.getByRole('link', { name: 'Go to the jobs' }).click();
    await page.getByTestId(`job-card-${JOB}`).waitFor();
    await page.context().close();
  }
});

test('replay the selected targets of a run: its ledger selects them, the replay page judges only them', async () => {
  const FLAKY = 'demo-flaky';
  // A RESTART: a new generation whose records meet their rejections again (a RESUME after a run
  // that finished its generation would have nothing to do).
  const started = await gql(TOKENS.operator, `mutation { startJob(input: {name: "${FLAKY}", mode: RESTART}) { run { id } userErrors { code message } } }`);
  const run = started.startJob.run ?? (await gql(TOKENS.viewer, `{ job(name: "${FLAKY}") { activeRun { id } } }`)).job.activeRun;
  assert.ok(run, `startJob: ${JSON.stringify(started.startJob.userErrors)}`);
  await until(
    'the flaky run to end',
    async () => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes((await gql(TOKENS.viewer, `query($id: ID!) { run(id: $id) { status } }`, { id: run.id })).run.status),
    90_000,
    500,
  );
  const rejected = (
    await gql(TOKENS.viewer, `query($id: ID!) { ledger(jobName: "${FLAKY}", runId: $id, state: [VALIDATION_REJECTED], first: 5) { nodes { targetKey attempt } } }`, { id: run.id })
  ).ledger.nodes;
  assert.ok(rejected.length >= 2, `rejected targets: ${JSON.stringify(rejected)}`);
  const [chosen, other] = rejected;

  const page = await login(browser, 'operator');
  await page.goto(`/admin/runs/${encodeURIComponent(run.id)}`);
  await page.getByRole('tab', { name: 'Ledger' }).click();
  const row = page.getByTestId('ledger-row').filter({ has: page.getByTestId('target-link').getByText(chosen.targetKey, { exact: true }) });
  await page.getByTestId('ledger-search').fill(chosen.targetKey);
  await row.first().waitFor();
  // Rejected without a call: the attempt says so rather than "0".
  assert.match(await row.first().innerText(), /not called/);
  await row.first().getByTestId('ledger-select').check();
  await page.getByTestId('replay-selected').click();
  await page.getByTestId('replay-selected-targets').waitFor();
  assert.match(await page.getByTestId('replay-selected-targets').innerText(), new RegExp(chosen.targetKey));
  await page.getByTestId('replay-scope').getByText('Failed', { exact: true }).click();
  await until('the preflight to count the one selected target', async () => /1 target\(s\) would be retried/.test(await page.getByTestId('preflight').innerText()));
  await shot(page, 'lb-06-replay-selected-1280');
  await page.getByTestId('replay-reason').fill('e2e: retry the one record after the fix');
  await page.getByTestId('replay-request').click();
  const outcome = page.getByTestId('replay-outcome');
  await outcome.waitFor();
  const status = await outcome.getAttribute('data-status');
  // demo-flaky is LOW risk with no outside effects: the replay runs at once, with no approval.
  assert.equal(status, 'EXECUTED', `outcome ${status}: ${await outcome.innerText()}`);
  const req = (await gql(TOKENS.viewer, `{ replayRequests(first: 1) { nodes { targetKeys status replayRun { id status } } } }`)).replayRequests.nodes[0];
  assert.deepEqual(req.targetKeys, [chosen.targetKey]);
  assert.ok(req.replayRun, `the executed request has no run: ${JSON.stringify(req)}`);
  await until(
    'the replay run to end',
    async () => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes((await gql(TOKENS.viewer, `query($id: ID!) { run(id: $id) { status } }`, { id: req.replayRun.id })).run.status),
    60_000,
    500,
  );
  // The other rejected target was not called again: its entry is still the first run's.
  const entries = (
    await gql(TOKENS.viewer, `query($k: String!) { target(jobName: "${FLAKY}", targetKey: $k) { entries { nodes { run { id } } } } }`, { k: other.targetKey })
  ).target.entries.nodes;
  // Entries are oldest first: the target's newest entry is the last.
  assert.equal(entries.at(-1).run.id, run.id, 'an unselected target was replayed');
  const mine = (
    await gql(TOKENS.viewer, `query($k: String!) { target(jobName: "${FLAKY}", targetKey: $k) { entries { nodes { run { id } } } } }`, { k: chosen.targetKey })
  ).target.entries.nodes;
  assert.equal(mine.at(-1).run.id, req.replayRun.id, 'the selected target was not replayed');
  // The replay run names its requester (not the approver) and links to its request.
  await page.goto(`/admin/runs/${encodeURIComponent(req.replayRun.id)}`);
  const startedBy = page.getByTestId('run-replay-request');
  await startedBy.waitFor();
  assert.match(await startedBy.innerText(), /replay request #\d+ of e2e-operator/);
  assert.match(await page.locator('body').innerText(), /· requested by e2e-operator ·/);
  await page.getByTestId('run-replay-request-link').click();
  const card = page.getByTestId('replay-request-card');
  await card.waitFor();
  assert.equal(await card.getAttribute('data-requested-by'), 'e2e-operator');
  assert.equal(await page.getByTestId('replay-request-card').count(), 1, 'the link opens the one request');
  await shot(page, 'lb-07-replay-run-links-its-request');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'lb-06-replay-selected-390');
  await page.context().close();
});
