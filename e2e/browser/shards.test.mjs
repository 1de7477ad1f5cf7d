// A sharded run's page in a real browser against `baton serve --demo` (see ../run.sh): the
// demo job demo-crawl splits each run into 16 shards that the instance's worker slots claim;
// the run page shows one cell per shard, live, and the summed progress bar. The tests run in
// order.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

let browser;
let runId;

/** cells reads the shard grid's cells: key, status, holder, progress, checkpoint, lease age. */
const cells = (page) =>
  page.getByTestId('shard-cell').evaluateAll((els) =>
    els.map((el) => ({
      key: el.getAttribute('data-shard-key'),
      status: el.getAttribute('data-shard-status'),
      statusText: el.querySelector('[data-testid="shard-status"]')?.textContent,
      holder: el.querySelector('[data-testid="shard-holder"]')?.textContent,
      progress: el.querySelector('[data-testid="shard-progress"]')?.textContent,
      checkpoint: el.querySelector('[data-testid="shard-checkpoint"]')?.textContent,
      leaseAgeMs: el.querySelector('[data-testid="shard-lease-age"]')?.getAttribute('data-lease-age-ms'),
      right: el.getBoundingClientRect().right,
    })),
  );

/** processedOf sums the processed counts the cells show. */
const processedOf = (cs) => cs.reduce((n, c) => n + Number((c.progress ?? '0').split(' ')[0].replaceAll(',', '')), 0);

before(async () => {
  browser = await launch();
  // A cap of 3 shards at once keeps most of them PENDING for a while: the grid shows every
  // state while the run goes on.
  const cap = await gql(TOKENS.operator, `mutation { updateJobSharding(input: {job: "demo-crawl", maxConcurrentShards: 3}) { job { maxConcurrentShards } userErrors { code message } } }`);
  assert.deepEqual(cap.updateJobSharding.userErrors, []);
  await until('a run of demo-crawl to start', async () => {
    const d = await gql(TOKENS.operator, `mutation { startJob(input: {name: "demo-crawl", mode: RESTART}) { run { id } userErrors { code } } }`);
    runId = d.startJob.run?.id;
    return runId !== undefined;
  });
});

after(async () => {
  if (runId) await gql(TOKENS.operator, `mutation($id: ID!) { cancelRun(input: {runId: $id}) { userErrors { code } } }`, { id: runId }).catch(() => {});
  await gql(TOKENS.operator, `mutation { updateJobSharding(input: {job: "demo-crawl", maxConcurrentShards: 0}) { userErrors { code } } }`).catch(() => {});
  await browser?.close();
});

test('the run page shows the 16 shards live at 1280 px: status in words, holder, progress, checkpoint, lease age', async () => {
  const page = await login(browser, 'viewer');
  await page.goto(`/admin/runs/${encodeURIComponent(runId)}`);
  await page.getByTestId('shard-grid').waitFor();
  const first = await until('16 cells, some held and some waiting', async () => {
    const cs = await cells(page);
    return cs.length === 16 && cs.some((c) => c.status === 'RUNNING') && cs.some((c) => c.status === 'PENDING') ? cs : null;
  });
  const running = first.filter((c) => c.status === 'RUNNING');
  assert.ok(running.length <= 3, `at most the cap of 3 shards held at once, got ${running.length}`);
  for (const c of running) {
    assert.equal(c.statusText, 'Running');
    assert.match(c.holder, /^on \S+/, `a running shard names its holder: ${c.holder}`);
    assert.notEqual(c.leaseAgeMs, '', 'a running shard has a lease age');
    assert.ok(Number(c.leaseAgeMs) < 30_000, `lease age ${c.leaseAgeMs} ms`);
  }
  for (const c of first.filter((c) => c.status === 'PENDING')) {
    assert.equal(c.statusText, 'Pending');
    assert.equal(c.holder, 'no holder');
  }
  assert.match(await page.getByTestId('shard-summary').textContent(), /^16 shards · \d+ running · \d+ pending · \d+ done/);

  // The cells move without a reload: progress and checkpoints of the held shards grow, and the
  // bar above sums them.
  const moved = await until('the cells to move', async () => {
    const cs = await cells(page);
    return processedOf(cs) > processedOf(first) && cs.some((c) => c.status === 'RUNNING' && c.checkpoint !== 'checkpoint —') ? cs : null;
  });
  const bar = await page.getByTestId('run-percent').textContent();
  assert.match(bar, /\d+(\.\d)?%/, `the summed bar shows a percent: ${bar}`);
  await shot(page, 'shards-01-grid-1280');
  assert.ok(processedOf(moved) > 0, `the grid shows progress (${bar})`);
  assert.equal(page.consoleErrors.length, 0, `console errors: ${page.consoleErrors.join('\n')}`);
  await page.context().close();
});

test('at 390 px the grid fits the screen and keeps updating', async () => {
  const page = await login(browser, 'viewer', { viewport: { width: 390, height: 844 } });
  await page.goto(`/admin/runs/${encodeURIComponent(runId)}`);
  await page.getByTestId('shard-grid').waitFor();
  const before = await until('16 cells', async () => {
    const cs = await cells(page);
    return cs.length === 16 ? cs : null;
  });
  for (const c of before) assert.ok(c.right <= 390, `cell ${c.key} ends at ${c.right} px, past the 390 px screen`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(overflow <= 390, `the page is ${overflow} px wide at 390`);
  await until('the cells to move at 390 px', async () => processedOf(await cells(page)) > processedOf(before));
  await page.getByTestId('shard-grid').scrollIntoViewIfNeeded();
  await shot(page, 'shards-02-grid-390');
  assert.equal(page.consoleErrors.length, 0, `console errors: ${page.consoleErrors.join('\n')}`);
  await page.context().close();
});
