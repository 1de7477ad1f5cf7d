// The job page's history charts in a real browser against a real `baton serve --demo` (see
// ../run.sh): demo runs are made through the API, then their history is read off the charts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED']);
const CHARTS = ['history-runs', 'history-duration', 'history-throughput', 'history-failures', 'history-downstream'];
let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});


/** runToEnd starts a run of job (once it has no active run) and waits for it to end. */
async function runToEnd(job, mode) {
  await until(`${job} to have no active run`, async () => (await gql(TOKENS.viewer, `query($n: String!) { job(name: $n) { activeRun { id } } }`, { n: job })).job.activeRun === null, 60_000, 250);
  const started = await gql(
    TOKENS.operator,
    `mutation($n: String!, $m: RunMode) { startJob(input: {name: $n, mode: $m}) { run { id } userErrors { code message } } }`,
    { n: job, m: mode },
  );
  assert.deepEqual(started.startJob.userErrors, [], `start ${job} ${mode}`);
  const id = started.startJob.run.id;
  return until(`the run of ${job} to end`, async () => {
    const { run } = await gql(TOKENS.viewer, `query($id: ID!) { run(id: $id) { status } }`, { id });
    return TERMINAL.has(run.status) ? run.status : null;
  }, 90_000, 250);
}

/** historyOf reads a job's history over the last 24 hours through the API. */
async function historyOf(job) {
  const d = await gql(
    TOKENS.viewer,
    `query($n: String!) { job(name: $n) { history(window: LAST_24_HOURS) { buckets { ended processed calls failures { count } } } } }`,
    { n: job },
  );
  const sum = (f) => d.job.history.buckets.reduce((n, b) => n + f(b), 0);
  return { ended: sum((b) => b.ended), processed: sum((b) => b.processed), calls: sum((b) => b.calls), failed: sum((b) => b.failures.reduce((n, f) => n + f.count, 0)) };
}

/** drawn returns the number of bars and line paths the chart of testId draws, and its x axis labels. */
async function drawn(page, testId) {
  return page.getByTestId(testId).evaluate((card) => ({
    bars: card.querySelectorAll('.recharts-bar-rectangle path.recharts-rectangle').length,
    lines: card.querySelectorAll('path.recharts-line-curve').length,
    ticks: Array.from(card.querySelectorAll('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value')).map((e) => e.textContent),
    yLabel: card.querySelector('.recharts-yAxis .recharts-label, .recharts-label')?.textContent ?? '',
  }));
}

test('demo runs show in the job page charts; the window switch redraws them', async () => {
  // demo-flaky: three generations of records failing in every class; demo-settlement: calls to
  // the fake provider, some failing downstream.
  for (let k = 0; k < 3; k++) await runToEnd('demo-flaky', 'RESTART');
  await runToEnd('demo-settlement', 'RESUME');
  const flaky = await historyOf('demo-flaky');
  const settlement = await historyOf('demo-settlement');
  assert.ok(flaky.ended >= 3 && flaky.processed > 0 && flaky.failed > 0, `demo-flaky's history: ${JSON.stringify(flaky)}`);
  assert.ok(settlement.ended >= 1 && settlement.calls > 0, `demo-settlement's history: ${JSON.stringify(settlement)}`);

  for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
    const page = await login(browser, 'viewer', { viewport });
    await page.goto('/admin/jobs/demo-flaky');
    const panel = page.getByTestId('job-history');
    await panel.waitFor();
    // The totals under the charts are the API's figures for the same window.
    const runsTotals = page.getByTestId('history-runs-totals');
    await until('the runs chart totals', async () => (await runsTotals.innerText()).startsWith(`${flaky.ended} runs ended`), 30_000);
    assert.match(await page.getByTestId('history-failures-totals').innerText(), new RegExp(`^${flaky.failed.toLocaleString('en-US')} failed items of ${flaky.processed.toLocaleString('en-US')}`));
    for (const id of CHARTS) {
      const d = await drawn(page, id);
      assert.ok(d.ticks.length >= 2, `${id} at ${viewport.width}px: x axis labels ${JSON.stringify(d.ticks)}`);
      assert.ok(d.ticks.every((t) => /^\d\d:\d\d$/.test(t)), `${id}: hourly labels, got ${JSON.stringify(d.ticks)}`);
    }
    const runs = await drawn(page, 'history-runs');
    assert.ok(runs.bars >= 1, `runs chart draws ${runs.bars} bars`);
    assert.ok((await drawn(page, 'history-failures')).bars >= 1, 'the failures chart draws no bar');
    assert.ok((await drawn(page, 'history-duration')).lines === 2, 'the duration chart draws p50 and p95');
    const tag = viewport.width === 1280 ? '1280' : '390';
    await panel.scrollIntoViewIfNeeded();
    await shot(page, `history-demo-flaky-24h-${tag}`);

    // 7 days: the same runs, 6-hourly buckets with weekday labels.
    await panel.getByText('7 d', { exact: true }).click();
    await until('the 7-day range', async () => /28 6-hourly buckets/.test(await page.getByTestId('history-range').innerText()), 30_000);
    assert.ok((await runsTotals.innerText()).startsWith(`${flaky.ended} runs ended`));
    const week = await drawn(page, 'history-runs');
    assert.ok(week.ticks.every((t) => /^[A-Z][a-z]{2} \d\d:\d\d$/.test(t)), `7 d labels: ${JSON.stringify(week.ticks)}`);
    // 30 days: daily buckets.
    await panel.getByText('30 d', { exact: true }).click();
    await until('the 30-day range', async () => /30 daily buckets/.test(await page.getByTestId('history-range').innerText()), 30_000);
    const month = await drawn(page, 'history-runs');
    assert.ok(month.ticks.every((t) => /^\d\d [A-Z][a-z]{2}$/.test(t)), `30 d labels: ${JSON.stringify(month.ticks)}`);
    assert.ok(month.bars >= 1);
    await shot(page, `history-demo-flaky-30d-${tag}`);

    // demo-settlement: the downstream error rate of its calls.
    await page.goto('/admin/jobs/demo-settlement');
    await page.getByTestId('job-history').waitFor();
    await until('the downstream totals', async () => new RegExp(`of ${settlement.calls.toLocaleString('en-US')} calls failed downstream`).test(await page.getByTestId('history-downstream-totals').innerText()), 30_000);
    assert.equal((await drawn(page, 'history-downstream')).lines, 1);
    await shot(page, `history-demo-settlement-24h-${tag}`);
    assert.deepEqual(page.consoleErrors, [], `console errors at ${viewport.width}px`);
    await page.context().close();
  }
});
