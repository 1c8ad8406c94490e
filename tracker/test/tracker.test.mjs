// Browser tests of tracker.js: headless Chromium (Debian's /usr/bin/chromium)
// driven by playwright-core, against `target/debug/refctl serve` on the test
// stack (DynamoDB Local and the S3 emulator; see scripts/stack.sh).
// Run through scripts/browser-test.sh, which builds refctl first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';

import { sizes, strip, TRACKER } from '../scripts/size.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// Where `cargo build` put it: CARGO_TARGET_DIR when set, as cargo itself reads it.
const BIN = path.join(path.resolve(ROOT, process.env.CARGO_TARGET_DIR || 'target'), 'debug/refctl');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

function loadPlaywright() {
  // Installed by scripts/install.sh into .local/node; NODE_PATH works too.
  for (const from of [path.join(ROOT, '.local/node/package.json'), import.meta.url]) {
    try {
      return createRequire(from)('playwright-core');
    } catch (_) {
      // try the next place
    }
  }
  throw new Error('playwright-core not found: run scripts/install.sh (make install)');
}
const { chromium } = loadPlaywright();

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
const env = {
  ...process.env,
  DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT || 'http://127.0.0.1:18000',
  S3_ENDPOINT: process.env.S3_ENDPOINT || 'http://127.0.0.1:19000',
  TABLE_NAME: `browser-${suffix}`,
  BUCKET_NAME: `browser-${suffix}`,
  RUST_LOG: 'warn',
};

const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });

const refctl = (...args) => JSON.parse(execFileSync(BIN, args, { env, encoding: 'utf8' }));

let server;
let serverLog = '';
let base;
let key;
let campaignId;
let affiliateId;
const CODE = 'Browser_1';

async function api(method, p, body, withKey = true) {
  const headers = {};
  if (withKey) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + p, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

before(async () => {
  refctl('tables', 'create');
  const { accountId } = refctl('account', 'create', '--name', 'Browser test', '--plan', 'growth');
  ({ key } = refctl('key', 'create', '--account', accountId, '--name', 'browser', '--mode', 'test'));

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(BIN, ['serve', '--port', String(port)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (b) => (serverLog += b));
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/api/v1/openapi.json`)).ok) break;
    } catch (_) {
      // not listening yet
    }
    if (server.exitCode !== null || Date.now() > deadline) {
      throw new Error(`refctl serve did not start:\n${serverLog}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const c = await api('POST', '/api/v1/campaigns', {
    name: 'Browser campaign',
    commissionType: 'PERCENTAGE',
    commissionValue: 10,
    isPublic: true,
  });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  campaignId = c.body.data.id;
  const a = await api('POST', '/api/v1/affiliates', {
    campaignId,
    email: 'browser-affiliate@partners.example.com',
    name: 'Browser affiliate',
    code: CODE,
  });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  assert.equal(a.body.data.status, 'ACTIVE');
  affiliateId = a.body.data.id;
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
});

// A fresh browser profile per visit: nothing carries over between scenarios.
async function withBrowser(fn, { initScript } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'reftrack-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const errors = [];
  await context.addInitScript(() => {
    window.__rejections = [];
    window.addEventListener('unhandledrejection', (e) => window.__rejections.push(String(e.reason)));
  });
  if (initScript) await context.addInitScript(initScript);
  const page = context.pages()[0] || (await context.newPage());
  page.on('pageerror', (e) => errors.push(e));
  try {
    await fn({ context, page });
    const rejections = await page.evaluate(() => window.__rejections);
    assert.deepEqual(rejections, [], 'no unhandled rejections');
    assert.deepEqual(errors.map(String), [], 'no uncaught errors');
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function loaded(page) {
  await page.waitForFunction(() => window.refTrack && typeof window.refTrack.identify === 'function');
}

async function storageOf(context, page) {
  return {
    local: await page.evaluate(() => Object.keys(localStorage)),
    session: await page.evaluate(() => Object.keys(sessionStorage)),
    cookies: (await context.cookies()).map((c) => c.name),
  };
}

test('click, consent, checkout identify, then a postback with the session id', async (t) => {
  await withBrowser(async ({ context, page }) => {
    await page.goto(`${base}/demo/landing?ref=${CODE.toLowerCase()}&campaign=${campaignId}`);
    await loaded(page);
    const sid = await page.evaluate(() => window.refTrack.ready());
    assert.match(sid, /^ses_[0-9A-Z]{26}$/);
    await page.waitForFunction((id) => document.getElementById('session').textContent === id, sid);
    assert.deepEqual(await storageOf(context, page), { local: [], session: [], cookies: [] }, 'nothing before consent');

    await page.click('#accept');
    const stored = JSON.parse(await page.evaluate(() => localStorage.getItem('refTrack.session')));
    assert.equal(stored.sessionId, sid);
    assert.equal((await context.cookies()).length, 0, 'never a cookie');

    await page.goto(`${base}/demo/checkout`);
    await loaded(page);
    assert.equal(await page.evaluate(() => window.refTrack.getSessionId()), sid);
    await page.waitForFunction((id) => document.getElementById('session').textContent === id, sid);
    await page.fill('#email', ' Shopper@Example.com ');
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.getElementById('result').textContent !== 'sending');
    assert.equal(await page.textContent('#result'), 'identified');

    // The referral exists: identifying the same customer again binds nothing new.
    const again = await api('POST', '/api/v1/track/identify', { sessionId: sid, customerEmail: 'shopper@example.com' }, false);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body.data, { sessionId: sid, bound: false });

    const doc = await api('GET', '/api/v1/openapi.json', undefined, false);
    if (doc.body.paths['/api/v1/conversions/postback']) {
      const bySession = await api('POST', '/api/v1/conversions/postback', {
        amount: 49.99,
        currency: 'USD',
        externalId: `browser-session-${suffix}`,
        conversionType: 'SALE',
        sessionId: sid,
      });
      assert.equal(bySession.status, 201, JSON.stringify(bySession.body));
      assert.equal(bySession.body.data.affiliateId, affiliateId);
      assert.equal(bySession.body.data.attribution, 'SESSION');
      // A later payment known only by the e-mail finds the referral identify made.
      const byEmail = await api('POST', '/api/v1/conversions/postback', {
        amount: 10,
        currency: 'USD',
        externalId: `browser-email-${suffix}`,
        conversionType: 'SALE',
        customerEmail: 'shopper@example.com',
      });
      assert.equal(byEmail.status, 201, JSON.stringify(byEmail.body));
      assert.equal(byEmail.body.data.affiliateId, affiliateId);
      t.diagnostic(`postbacks attributed: ${bySession.body.data.attribution}, ${byEmail.body.data.attribution}`);
    } else {
      // TODO(conversions): POST /api/v1/conversions/postback is not served yet;
      // once it is (it appears in the OpenAPI description), the branch above
      // asserts that the session attributes the conversion to the affiliate.
      t.diagnostic('TODO: postback not available yet; checked the referral through identify only');
    }
  });
});

test('a visit without consent stores nothing', async () => {
  await withBrowser(async ({ context, page }) => {
    await page.goto(`${base}/demo/landing?ref=${CODE}&campaign=${campaignId}`);
    await loaded(page);
    const sid = await page.evaluate(() => window.refTrack.ready());
    assert.match(sid, /^ses_/, 'the click is recorded and kept in memory');
    assert.deepEqual(await storageOf(context, page), { local: [], session: [], cookies: [] });
    const idb = await page.evaluate(async () => (indexedDB.databases ? (await indexedDB.databases()).length : 0));
    assert.equal(idb, 0);

    // Another page of the site knows no session and identify resolves false.
    await page.goto(`${base}/demo/checkout`);
    await loaded(page);
    assert.equal(await page.evaluate(() => window.refTrack.getSessionId()), null);
    assert.equal(await page.evaluate(() => window.refTrack.identify('a@example.com')), false);
    assert.deepEqual(await storageOf(context, page), { local: [], session: [], cookies: [] });
  });
});

test('with the API down the page keeps working and nothing throws', async () => {
  const closed = await freePort(); // nothing listens there
  await withBrowser(async ({ page }) => {
    await page.goto(`${base}/demo/landing?ref=${CODE}&campaign=${campaignId}&api=http://127.0.0.1:${closed}`);
    await loaded(page);
    assert.equal(await page.evaluate(() => window.refTrack.ready()), null);
    await page.click('#accept');
    assert.equal(await page.textContent('#consent-state'), 'given', 'the page still works');
    assert.equal(await page.evaluate(() => window.refTrack.getSessionId()), null);
    assert.equal(await page.evaluate(() => window.refTrack.identify('a@example.com')), false);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
  });
});

test('odd calls and blocked storage never throw into the page', async () => {
  const blockStorage = () => {
    Object.defineProperty(window, 'localStorage', {
      get() {
        throw new Error('storage blocked');
      },
    });
  };
  await withBrowser(
    async ({ page }) => {
      await page.goto(`${base}/demo/landing?ref=${CODE}&campaign=${campaignId}`);
      await loaded(page);
      const sid = await page.evaluate(() => window.refTrack.ready());
      assert.match(sid, /^ses_/, 'tracking works without storage');
      const results = await page.evaluate(async () => {
        const t = window.refTrack;
        return [
          t.consent(),
          t.getSessionId() !== null,
          await t.identify(),
          await t.identify(null),
          await t.identify(42),
          await t.identify({}),
          await t.identify('not an e-mail'),
          t.forget(),
          t.getSessionId(),
        ];
      });
      assert.deepEqual(results, [true, true, false, false, false, false, false, true, null]);
    },
    { initScript: blockStorage },
  );
});

test('the script is small and valid once stripped', (t) => {
  const s = sizes();
  t.diagnostic(`tracker.js: ${JSON.stringify(s)}`);
  new vm.Script(strip(readFileSync(TRACKER, 'utf8')));
  assert.ok(s.gzipStripped < 2048, `gzipped ${s.gzipStripped} bytes`);
});
