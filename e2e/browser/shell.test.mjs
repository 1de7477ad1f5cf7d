// The console's frame in a real browser: alerts (acknowledge, silence, history), the nav
// badges, the audit log's filters and expanded rows, a revoked token signing the console out,
// and the phone layout. Its alarms come from a job of its own, seeded in the database (not
// registered with the server), so the demo's jobs are left alone.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ARTIFACTS, BASE, gqlResponse, launch, login, shot, TOKENS, until } from './helpers.mjs';

const DB = process.env.E2E_DATABASE_URL;
const BIN = process.env.E2E_BATON_BIN || path.resolve('../.data/e2e/baton');
const JOB = 'e2e-shell-a-job-with-a-name-long-enough-to-overflow-a-phone-screen-if-nothing-wraps-it';
const RETRIED = `TARGET_RETRIED:job:${JOB}`;
const DOUBT = `AMBIGUOUS_EFFECT:job:${JOB}`;

let browser;

function psql(sql) {
  return execFileSync('psql', [DB, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
}

function baton(...args) {
  return execFileSync(BIN, args, { encoding: 'utf8', env: { ...process.env, DATABASE_URL: DB } });
}


before(async () => {
  assert.ok(DB, 'E2E_DATABASE_URL is not set: run the specs through e2e/run.sh');
  // One target failed three times (TARGET_RETRIED) and one in doubt (AMBIGUOUS_EFFECT).
  psql(`
    INSERT INTO job_settings (name) VALUES ('${JOB}');
    INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
        lease_until, generation, finished_at, total, processed, succeeded, failed, ambiguous)
      VALUES ('${JOB}', 'FAILED', 'MANUAL', 'RESUME', 'seed', 'seed', 'tok', 30, now(), 1, now(), 2, 2, 0, 1, 1);
    INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id, last_error)
      VALUES ('${JOB}', 1, 'acct-7', 'send', 'TRANSIENT', 3, 'e2e-k1', true, (SELECT max(id) FROM job_runs WHERE job_name = '${JOB}'), 'HTTP 503'),
             ('${JOB}', 1, 'acct-8', 'send', 'AMBIGUOUS_EFFECT', 1, 'e2e-k2', true, (SELECT max(id) FROM job_runs WHERE job_name = '${JOB}'), 'timeout');
    INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('${JOB}', 1, 0, 'AMBIGUOUS_EFFECT', 1)
      ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + 1;`);
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

const card = (page, id) => page.locator(`[data-testid=alert-card][data-alert-id="${id}"]`);

test('alerts: acknowledge and silence, the badges follow, the history lists the episodes', async () => {
  const page = await login(browser, 'operator');
  await page.goto('/admin/alerts');
  await card(page, RETRIED).waitFor();
  await card(page, DOUBT).waitFor();
  const badge = page.getByTestId('alerts-badge');
  const before = Number(await badge.getAttribute('data-count'));
  assert.ok(before >= 2, `alerts badge ${before}, want at least the 2 seeded alarms`);
  const navAlerts = page.getByTestId('nav-badge-alerts');
  assert.equal(Number(await navAlerts.innerText()), before);
  const navDoubt = page.getByTestId('nav-badge-ambiguous');
  await navDoubt.waitFor();
  assert.ok(Number(await navDoubt.innerText()) >= 1, 'ambiguous queue badge');
  // Links to the job concerned.
  assert.equal(await card(page, RETRIED).getByTestId('alert-job-link').getAttribute('href'), `/admin/jobs/${JOB}`);
  await shot(page, 'shell-01-alerts');

  await card(page, RETRIED).getByTestId('alert-ack').click();
  await until('the acknowledgement to show', async () => (await card(page, RETRIED).getAttribute('data-acked')) === 'true');
  assert.match(await card(page, RETRIED).getByTestId('alert-acked').innerText(), /Acknowledged by e2e-operator/);
  await until('the badge to count one less', async () => Number(await badge.getAttribute('data-count')) === before - 1);

  await card(page, DOUBT).getByTestId('alert-silence').click();
  await until('the silenced alarm to leave the list', async () => (await card(page, DOUBT).count()) === 0);
  await until('the badge to count two less', async () => Number(await badge.getAttribute('data-count')) === before - 2);
  await page.getByTestId('show-silenced').check();
  await card(page, DOUBT).waitFor();
  assert.equal(await card(page, DOUBT).getAttribute('data-silenced'), 'true');
  assert.match(await card(page, DOUBT).getByTestId('alert-silenced').innerText(), /Silenced by e2e-operator until/);
  // The ambiguous queue still counts what is in doubt: a silence hides the alarm, not the doubt.
  assert.ok(Number(await navDoubt.innerText()) >= 1);
  await shot(page, 'shell-02-alerts-acked-silenced');

  // Another browser (another viewer of the cluster) sees the same state.
  const viewer = await login(browser, 'viewer');
  await viewer.goto('/admin/alerts');
  await card(viewer, RETRIED).waitFor();
  assert.equal(await card(viewer, RETRIED).getAttribute('data-acked'), 'true');
  assert.equal(await card(viewer, DOUBT).count(), 0, 'the silenced alarm shows to the viewer');
  // A viewer's disabled action says why, on hover.
  const silence = card(viewer, RETRIED).getByTestId('alert-silence');
  assert.equal(await silence.isDisabled(), true);
  await card(viewer, RETRIED).locator('[data-disabled-reason]').first().hover();
  await viewer.getByRole('tooltip').filter({ hasText: 'Needs the operator role; you are a viewer.' }).waitFor();
  await viewer.screenshot({ path: path.join(ARTIFACTS, 'shell-03-viewer-reason.png') });
  await viewer.context().close();

  await page.getByTestId('alerts-tab-history').click();
  await page.getByTestId('alert-history').waitFor();
  const rows = page.getByTestId('alert-history-row').filter({ hasText: JOB.slice(0, 30) });
  await until('both episodes in the history', async () => (await rows.count()) >= 2);
  assert.match(await rows.filter({ hasText: 'Target retried' }).first().innerText(), /e2e-operator/);
  await shot(page, 'shell-04-alert-history');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('audit log: filters in the URL, an expanded row shows the stored, capped arguments', async () => {
  // A viewer's refused request of 20 KB, every value within the API's input limits (100 target
  // keys of 200 characters): audited, capped. (A single value over its limit is refused whole as
  // INPUT_TOO_LONG, and its audit row holds only the field and the length.)
  const keys = Array.from({ length: 100 }, (_, k) => `${String(k).padStart(3, '0')}-${'k'.repeat(196)}`);
  const refused = await gqlResponse(TOKENS.viewer, 'mutation($k: [String!]) { requestReplay(input: {runId: "UnVuOjE=", scope: FULL, reason: "why", targetKeys: $k}) { userErrors { code } } }', {
    k: keys,
  });
  assert.equal(refused.errors?.[0]?.extensions?.code, 'FORBIDDEN');

  const page = await login(browser, 'operator');
  await page.goto('/admin/audit');
  await page.getByTestId('audit-table').waitFor();
  await page.getByTestId('audit-filter-actor').fill('e2e-viewer');
  await page.getByTestId('audit-filter-outcome').fill('FORBIDDEN');
  await page.getByTestId('audit-filter-apply').click();
  await until('the URL to hold the filters', async () => /actor=e2e-viewer/.test(page.url()) && /outcome=FORBIDDEN/.test(page.url()));
  const rows = page.getByTestId('audit-row');
  await until('only the viewer’s refusals', async () => {
    const texts = await rows.allInnerTexts();
    return texts.length > 0 && texts.every((t) => t.includes('e2e-viewer') && t.includes('FORBIDDEN'));
  });
  const first = rows.first();
  assert.match(await first.innerText(), /requestReplay/);
  await first.getByTestId('audit-truncated').waitFor();
  await first.getByTestId('audit-expand').click();
  const args = page.getByTestId('audit-args').first();
  await args.waitFor();
  const text = await args.innerText();
  assert.match(text, /"_truncated": true/);
  assert.ok(text.length < 9000, `expanded arguments of ${text.length} characters, want them capped`);
  await shot(page, 'shell-05-audit-filtered-expanded');

  // The filter survives a reload (it is in the URL), and the action filter finds the alarm's acknowledgement.
  await page.goto('/admin/audit?action=acknowledgeAlert');
  await page.getByTestId('audit-row').first().waitFor();
  assert.equal(await page.getByTestId('audit-filter-action').inputValue(), 'acknowledgeAlert');
  for (const t of await page.getByTestId('audit-row').allInnerTexts()) assert.match(t, /acknowledgeAlert/);
  await page.getByTestId('audit-row').first().getByTestId('audit-expand').click();
  assert.match(await page.getByTestId('audit-args').first().innerText(), /TARGET_RETRIED/);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('phone: the pills have text, audit columns are reachable, a long job name does not overflow', async () => {
  const page = await login(browser, 'operator', { viewport: { width: 390, height: 844 } });
  const role = page.getByTestId('viewer-role');
  const live = page.getByTestId('live-indicator');
  for (const [name, pill] of [['role', role], ['live', live]]) {
    const text = (await pill.innerText()).trim();
    assert.ok(text.length > 0, `${name} pill is empty`);
    const box = await pill.boundingBox();
    const scroll = await pill.evaluate((el) => {
      const label = el.querySelector('.mantine-Badge-label') ?? el;
      return { sw: label.scrollWidth, cw: label.clientWidth };
    });
    assert.ok(box && box.width >= 40 && box.x + box.width <= 390, `${name} pill box ${JSON.stringify(box)}`);
    assert.ok(scroll.sw <= scroll.cw + 1, `${name} pill text cut: ${JSON.stringify(scroll)}`);
  }
  // Every header control fits on the screen.
  for (const id of ['alerts-badge', 'color-scheme', 'logout']) {
    const b = await page.getByTestId(id).boundingBox();
    assert.ok(b && b.x >= 0 && b.x + b.width <= 390, `${id} at ${JSON.stringify(b)}: off the 390 px screen`);
  }
  await shot(page, 'shell-06-phone-header');

  const pageWidth = () => page.evaluate(() => document.documentElement.scrollWidth);
  await page.goto(`/admin/jobs/${encodeURIComponent(JOB)}`);
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await until('the job page to settle', async () => (await page.getByRole('heading', { level: 1 }).first().innerText()).length > 0);
  assert.ok((await pageWidth()) <= 390, `the job page is ${await pageWidth()} px wide on a 390 px phone`);
  await shot(page, 'shell-07-phone-long-job');

  await page.goto('/admin/alerts?tab=history');
  await page.getByTestId('alert-history').waitFor();
  assert.ok((await pageWidth()) <= 390, `the alerts page is ${await pageWidth()} px wide`);

  await page.goto('/admin/audit');
  const wrap = page.getByTestId('audit-table-wrap');
  await wrap.waitFor();
  assert.ok((await pageWidth()) <= 390, `the audit page is ${await pageWidth()} px wide`);
  const last = page.getByRole('columnheader', { name: 'Arguments' });
  await wrap.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
  await until('the last column to scroll into view', async () => {
    const b = await last.boundingBox();
    return b && b.x >= 0 && b.x + Math.min(b.width, 40) <= 390;
  });
  await shot(page, 'shell-08-phone-audit-scrolled');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a token revoked while the console is open signs it out: no reconnecting, actions disabled, sign in offered', async () => {
  const out = baton('token', 'create', '--name', 'e2e-shell-revokee', '--role', 'operator');
  const token = out.trim().split('\n').pop().trim();
  assert.match(token, /^bt_/);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: BASE });
  const page = await context.newPage();
  await page.goto('/admin/alerts');
  await page.getByTestId('login-token').fill(token);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('viewer-role').waitFor();
  const live = page.getByTestId('live-indicator');
  await until('the live socket to connect', async () => (await live.getAttribute('data-state')) === 'connected');
  await card(page, RETRIED).waitFor();
  assert.equal(await card(page, RETRIED).getByTestId('alert-silence').isEnabled(), true);

  baton('token', 'revoke', '--name', 'e2e-shell-revokee');
  const states = new Set();
  await until(
    'the console to be signed out',
    async () => {
      const s = await live.getAttribute('data-state');
      states.add(s);
      return s === 'refused';
    },
    20_000,
    100,
  );
  assert.ok(!states.has('reconnecting'), `the live indicator went through ${[...states]}`);
  assert.equal((await live.innerText()).trim().toLowerCase(), 'signed out');
  await page.getByTestId('signed-out-banner').waitFor();
  // What was loaded stays readable; every action is disabled and says why.
  await card(page, RETRIED).waitFor();
  assert.equal(await card(page, RETRIED).getByTestId('alert-silence').isDisabled(), true);
  assert.match(await card(page, RETRIED).locator('[data-disabled-reason]').first().getAttribute('data-disabled-reason'), /Signed out/);
  await shot(page, 'shell-09-signed-out');
  // It stays signed out: no retry brings it back.
  for (const end = Date.now() + 3_000; Date.now() < end; ) {
    assert.equal(await live.getAttribute('data-state'), 'refused');
    await new Promise((r) => setTimeout(r, 250));
  }

  await page.getByTestId('sign-in-again').click();
  await page.getByTestId('login-token').waitFor();
  await page.getByRole('alert').filter({ hasText: 'did not accept' }).waitFor();
  await shot(page, 'shell-10-sign-in-again');
  await context.close();
});
