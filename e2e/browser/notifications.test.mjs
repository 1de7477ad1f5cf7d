// The notifications page against a real `baton serve --demo` (run.sh gives it a secret key):
// an admin adds a webhook channel whose secret never shows again, a bad URL is refused by its
// field with nothing stored, a route is added, and a test notification reaches a real receiver
// here, signed with the secret; at 1280 and 390 px.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { gql, launch, login, shot, TOKENS, until } from './helpers.mjs';

const SECRET = 'e2e-signing-secret-never-shown-0042';
const NAME = 'e2e-hook';
let browser;
let receiver;
/** received holds the requests the receiver got: headers and raw body. */
const received = [];

const CHANNELS = `{ notificationChannels { id name secretHint routes { jobs minSeverity } } }`;

before(async () => {
  browser = await launch();
  receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
});

after(async () => {
  const list = (await gql(TOKENS.admin, CHANNELS)).notificationChannels;
  for (const c of list.filter((x) => x.name === NAME)) {
    await gql(TOKENS.admin, `mutation($id: ID!) { deleteNotificationChannel(input: {id: $id}) { userErrors { code } } }`, { id: c.id });
  }
  await new Promise((r) => receiver.close(r));
  await browser?.close();
});

/** verify checks a webhook's signature as a receiver does. */
function verify(r) {
  const ts = r.headers['x-baton-timestamp'];
  const want = 'v1=' + crypto.createHmac('sha256', SECRET).update(`${ts}.${r.body}`).digest('hex');
  return Math.abs(Date.now() / 1000 - Number(ts)) < 300 && crypto.timingSafeEqual(Buffer.from(want), Buffer.from(r.headers['x-baton-signature']));
}

test('an admin wires a webhook, its secret never shows, and a test notification arrives signed', async () => {
  const page = await login(browser, 'admin');
  await page.getByRole('link', { name: 'Notifications' }).click();
  await page.waitForURL('**/admin/notifications');
  const url = `http://127.0.0.1:${receiver.address().port}/hook`;

  // A URL that is not http(s) is refused by its field; nothing is stored.
  await page.getByTestId('channel-name').fill(NAME);
  await page.getByTestId('channel-url').fill('ftp://example.com/hook');
  await page.getByTestId('channel-secret').fill(SECRET);
  await page.getByTestId('channel-add').click();
  await page.getByText(/a channel posts to an http or https URL/).waitFor();
  assert.equal((await gql(TOKENS.admin, CHANNELS)).notificationChannels.filter((c) => c.name === NAME).length, 0);
  await shot(page, 'notify-01-refused-1280');

  await page.getByTestId('channel-url').fill(url);
  await page.getByTestId('channel-add').click();
  const card = page.locator(`[data-testid="channel-card"][data-name="${NAME}"]`);
  await card.waitFor();
  assert.equal(await card.getByTestId('channel-secret-hint').innerText(), '…0042');
  assert.ok(!(await page.content()).includes(SECRET), 'the page shows the secret');

  // A route.
  await card.getByTestId('route-jobs').fill('demo-*');
  await card.getByTestId('route-add').click();
  await card.getByText('→ every alarm of demo-* · any severity').waitFor();
  const saved = (await gql(TOKENS.admin, CHANNELS)).notificationChannels.find((c) => c.name === NAME);
  assert.deepEqual(saved.routes, [{ jobs: ['demo-*'], minSeverity: 'WARNING' }]);

  // A test notification reaches the receiver, signed with the secret.
  await card.getByTestId('channel-test').click();
  const got = await until('the test notification to reach the receiver', () => received.find((r) => JSON.parse(r.body).event === 'test'));
  assert.ok(verify(got), 'the webhook does not verify with its secret');
  await until('the delivery to show SENT', async () => {
    await page.getByTestId('deliveries-refresh').click();
    return (await page.locator('[data-testid="delivery"][data-status="SENT"]').count()) > 0;
  });
  await shot(page, 'notify-02-channel-1280');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the page fits a 390 px phone, and a viewer cannot change channels', async () => {
  const page = await login(browser, 'viewer', { viewport: { width: 390, height: 844 } });
  await page.goto('/admin/notifications');
  await page.getByTestId('channel-card').first().waitFor();
  assert.equal(await page.getByTestId('add-channel').count(), 0);
  assert.equal(await page.getByTestId('channel-test').count(), 0);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the phone`);
  await shot(page, 'notify-03-viewer-390');
  await page.context().close();
});
