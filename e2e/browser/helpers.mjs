// Shared helpers of the browser specs: the browser, logging in per role, screenshots.
import assert from 'node:assert/strict';
import path from 'node:path';

import { chromium } from 'playwright-core';

export const BASE = mustEnv('BATON_URL');
export const ARTIFACTS = process.env.E2E_ARTIFACTS ?? path.resolve('test-results');
export const TOKENS = {
  viewer: mustEnv('E2E_TOKEN_VIEWER'),
  operator: mustEnv('E2E_TOKEN_OPERATOR'),
  approver: mustEnv('E2E_TOKEN_APPROVER'),
  admin: mustEnv('E2E_TOKEN_ADMIN'),
};

function mustEnv(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the specs through e2e/run.sh`);
  return v;
}

/** launch starts Debian's chromium, never a downloaded browser. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
}

/**
 * login opens a fresh context (its own sessionStorage), logs in with the role's token and
 * waits for the role badge. Console errors are collected on page.consoleErrors.
 */
export async function login(browser, role, { viewport = { width: 1280, height: 900 }, colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, baseURL: BASE });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  page.consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => page.consoleErrors.push(String(e)));
  await page.goto('/admin/');
  await page.getByTestId('login-token').fill(TOKENS[role]);
  await page.getByTestId('login-submit').click();
  const badge = page.getByTestId('viewer-role');
  await badge.waitFor();
  assert.equal(await badge.getAttribute('data-role'), role.toUpperCase());
  return page;
}

/**
 * shot saves a screenshot of the whole page as an artifact. The viewport grows to the page's
 * height for it (a full-page capture would paint the fixed header in the middle), and focus and
 * pointer leave the controls so no tooltip covers the page.
 */
export async function shot(page, name) {
  const viewport = page.viewportSize();
  await page.mouse.move(0, 0);
  await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  if (viewport && height > viewport.height) await page.setViewportSize({ width: viewport.width, height: Math.min(height, 4000) });
  await page.waitForTimeout(150);
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
  if (viewport && height > viewport.height) await page.setViewportSize(viewport);
}

/** until polls fn until it returns a truthy value, or fails after ms. */
export async function until(what, fn, ms = 30_000, every = 200) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, every));
  }
  throw new Error(`timed out after ${ms}ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/** runIdFromURL is the global run id in a /admin/runs/:id URL. */
export function runIdFromURL(url) {
  const m = /\/admin\/runs\/([^/?#]+)/.exec(url);
  return m ? decodeURIComponent(m[1]) : null;
}

/** statusOf reads the run status badge's value. */
export async function statusOf(locator) {
  return locator.getAttribute('data-value');
}

/** gqlResponse posts a GraphQL request with token and returns its whole response body. */
export async function gqlResponse(token, query, variables = {}) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return res.json();
}

/** gql posts a GraphQL request with token and returns its data, throwing on any error. */
export async function gql(token, query, variables = {}) {
  const body = await gqlResponse(token, query, variables);
  if (body.errors?.length) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}
