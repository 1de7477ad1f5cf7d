// The downstreams page against a real `baton serve --demo`: the demo jobs' downstreams with
// live figures, an edit that applies, a bad value refused by its field with nothing changed,
// pause shown as PAUSED, at 1280 and 390 px.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

let browser;
/** The limits of the downstream the specs change, as they were before: put back at the end. */
let restore = null;
/** The runs the specs start, cancelled at the end so that the specs after find the jobs free. */
const startedRuns = [];

const gqlAs = (role, query, variables = {}) => gql(TOKENS[role], query, variables);

const DOWNSTREAMS = `{ downstreams { name version updatedBy
  limits { ratePerSecond burst concurrency quota quotaWindow paused }
  stats { calls callsPerSecond } } }`;

const UPDATE = `mutation($in: UpdateDownstreamInput!) { updateDownstream(input: $in) {
  downstream { name version limits { ratePerSecond burst paused } } userErrors { code field message } } }`;

before(async () => {
  browser = await launch();
});

after(async () => {
  if (restore) {
    const { name, limits } = restore;
    const input = { name, paused: false, reason: 'e2e: put back' };
    if (limits.ratePerSecond !== null) Object.assign(input, { ratePerSecond: limits.ratePerSecond, burst: limits.burst });
    await gqlAs('operator', UPDATE, { in: input });
  }
  for (const id of startedRuns) {
    await gqlAs('operator', `mutation($id: ID!) { cancelRun(input: {runId: $id}) { userErrors { code } } }`, { id });
  }
  await until(
    'the runs this spec started to end',
    async () => {
      for (const id of startedRuns) {
        const d = await gqlAs('viewer', `query($id: ID!) { run(id: $id) { status } }`, { id });
        if (['STARTING', 'RUNNING'].includes(d.run?.status)) return false;
      }
      return true;
    },
    60_000,
    500,
  );
  await browser?.close();
});

/** startRun starts a RESTART run of job (a RESUME after a finished run has nothing to do). */
async function startRun(job) {
  const d = await gqlAs('operator', `mutation($n: String!) { startJob(input: {name: $n, mode: RESTART}) { run { id } userErrors { code } } }`, { n: job });
  const id = d.startJob.run?.id ?? null;
  if (id) startedRuns.push(id);
  return id;
}

/** busyDownstream starts the demo jobs until a declared downstream has calls, and returns it. */
async function busyDownstream() {
  const first = (await gqlAs('viewer', DOWNSTREAMS)).downstreams;
  assert.ok(first.length > 0, 'the demo declares no downstream');
  await startRun('demo-settlement');
  await startRun('demo-collect');
  return until(
    'a downstream of the demo to have calls',
    async () => {
      const list = (await gqlAs('viewer', DOWNSTREAMS)).downstreams;
      return list.find((d) => d.name === 'provider' && d.stats.calls > 0) ?? list.find((d) => d.stats.calls > 0);
    },
    60_000,
    500,
  );
}

const card = (page, name) => page.locator(`[data-testid="downstream-card"][data-name="${name}"]`);

test('the page shows live figures, applies an edit, refuses a bad value by its field, and shows PAUSED', async () => {
  const ds = await busyDownstream();
  restore = { name: ds.name, limits: ds.limits };
  const page = await login(browser, 'operator');
  await page.getByRole('link', { name: 'Downstreams' }).click();
  await page.waitForURL('**/admin/downstreams');
  const c = card(page, ds.name);
  await c.waitFor();

  // Live: the figures are read again every second, and the calls show.
  const asOf = page.getByTestId('ds-as-of');
  const firstAsOf = Number(await until('the first figures', () => asOf.getAttribute('data-as-of')));
  await until('the figures to be read again', async () => Number(await asOf.getAttribute('data-as-of')) > firstAsOf, 5_000, 100);
  await until('calls to show on the card', async () => Number((await c.getByTestId('ds-calls').innerText()).match(/[\d,]+/)?.[0].replace(/,/g, '')) > 0);
  await until('the sparkline to hold samples', async () => Number(await c.getByTestId('sparkline').getAttribute('data-points')) >= 3, 10_000);
  await shot(page, 'ds-01-live-1280');

  // An edit applies.
  await c.getByTestId('ds-edit').click();
  const newRate = ds.limits.ratePerSecond === 37 ? 38 : 37;
  await c.getByTestId('ds-ratePerSecond').fill(String(newRate));
  await c.getByTestId('ds-reason').fill('e2e: provider asked for less');
  await c.getByTestId('ds-save').click();
  const edited = await until('the new rate on the server', async () => {
    const d = (await gqlAs('viewer', DOWNSTREAMS)).downstreams.find((x) => x.name === ds.name);
    return d.limits.ratePerSecond === newRate ? d : null;
  });
  assert.equal(edited.updatedBy, 'e2e-operator');
  await until('the card to show the new rate', async () => (await c.getByTestId('ds-effective').innerText()).includes(`of ${newRate}/s`));

  // A bad value is refused by its field, and changes nothing.
  await c.getByTestId('ds-burst').fill('1000000');
  await c.getByTestId('ds-save').click();
  const err = c.getByTestId('ds-burst-error');
  await err.waitFor();
  assert.match(await err.innerText(), /INVALID_INPUT/);
  const unchanged = (await gqlAs('viewer', DOWNSTREAMS)).downstreams.find((x) => x.name === ds.name);
  assert.equal(unchanged.version, edited.version, 'a refused update changed the version');
  assert.deepEqual(unchanged.limits, edited.limits, 'a refused update changed the limits');
  await shot(page, 'ds-02-refused-1280');

  // Pause shows PAUSED; resume lifts it.
  await c.getByTestId('ds-revert').click();
  await c.getByTestId('ds-pause').click();
  await until('the card to be PAUSED', async () => (await c.getAttribute('data-paused')) === 'true');
  await c.getByTestId('ds-paused').waitFor();
  await shot(page, 'ds-03-paused-1280');
  await c.getByTestId('ds-resume').click();
  await until('the card to run again', async () => (await c.getAttribute('data-paused')) === 'false');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the page fits a 390 px phone', async () => {
  const page = await login(browser, 'viewer', { viewport: { width: 390, height: 844 } });
  await page.goto('/admin/downstreams');
  await page.getByTestId('downstream-card').first().waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the phone`);
  // A viewer may look, not change: the editor's actions say why they are disabled.
  await page.getByTestId('ds-edit').first().click();
  assert.equal(await page.getByTestId('ds-save').first().isDisabled(), true);
  await shot(page, 'ds-04-phone-390');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
