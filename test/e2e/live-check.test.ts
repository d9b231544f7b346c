/**
 * `mpf live check` as an operator runs it (a real `mpf` process with only the variables it is
 * given), against the provider simulator and against a loopback HTTPS stand-in that answers the
 * categories GET as the provider does, with a certificate made here with openssl. Everything is on
 * loopback: the check refuses a loopback address as "not live" unless it is run with
 * --allow-loopback-stand-in, which the tests use and NODE_ENV=production refuses.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PROVIDER_PATHS } from '../../src/contract/provider';
import { CATEGORIES, MESSAGES, startSimulator, type RunningSimulator } from '../../src/simulator';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { SIMULATOR_ANSWER_HEADER } from '../../src/simulator/identity';
import { SIM_CREDENTIALS } from '../helpers/provider';
import { runMpf } from '../helpers/processes';
import { SIMULATOR_MARK_HEADER } from '../../src/starter/cli/commands/live/provider-call';

const STAND_IN = '--allow-loopback-stand-in';

/** Only what an operator's shell would have, plus `extra` (nothing inherited from the test run). */
const userEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...extra });

interface Check {
  id: string;
  status: 'pass' | 'warn' | 'fail' | 'skip';
  summary: string;
  details?: Record<string, unknown>;
}
const checkOf = (report: { checks: Check[] }, id: string): Check => report.checks.find((c) => c.id === id) ?? assert.fail(`no check ${id}`);

/** A self-signed certificate for 127.0.0.1 and localhost, valid for `days`; the test's CA is the certificate itself. */
function selfSigned(dir: string, name: string, days: number): { cert: string; key: string; certPath: string } {
  const certPath = path.join(dir, `${name}.cert.pem`);
  const keyPath = path.join(dir, `${name}.key.pem`);
  const r = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', String(days),
      '-subj', '/O=mpf test/CN=provider stand-in', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `openssl failed: ${r.stderr}`);
  return { cert: fs.readFileSync(certPath, 'utf8'), key: fs.readFileSync(keyPath, 'utf8'), certPath };
}

interface StandIn {
  url: string;
  /** Every HTTP request that reached it. */
  seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>;
  close(): Promise<void>;
}

/**
 * An HTTPS server on loopback that answers GET categories as the provider does (the envelope and
 * data.data, no simulator mark), with its Date `dateOffsetMs` away from now; anything else is 404.
 */
async function standIn(tls: { cert: string; key: string }, dateOffsetMs = 0): Promise<StandIn> {
  const seen: StandIn['seen'] = [];
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      const ok = req.method === 'GET' && req.url === PROVIDER_PATHS.categories;
      const body = ok
        ? { status: 'success', message: MESSAGES.categories, data: { data: CATEGORIES.map((c) => ({ code: c.code, name: c.name })) } }
        : { status: 'error', message: 'Not found' };
      res.writeHead(ok ? 200 : 404, {
        'content-type': 'application/json',
        ...(dateOffsetMs !== 0 ? { date: new Date(Date.now() + dateOffsetMs).toUTCString() } : {}),
      });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('mpf live check against the provider simulator', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    sim = await startSimulator();
    control = createControlClient(sim.baseUrl);
    env = userEnv({
      MPS_BASE_URL: sim.baseUrl,
      MPS_LIVE: '1',
      MPS_SECRET_KEY: SIM_CREDENTIALS.secretKey,
      MPS_ACCESS_TOKEN: SIM_CREDENTIALS.accessToken,
      MPS_MERCHANT_REF: SIM_CREDENTIALS.merchantRef,
    });
  });
  after(async () => {
    await sim?.close();
  });

  test('the mark the check looks for is the one the simulator puts on every answer', () => {
    assert.equal(SIMULATOR_MARK_HEADER, SIMULATOR_ANSWER_HEADER);
  });

  test('refuses the simulator at a loopback address as not live, exits non-zero and dials nothing', async () => {
    await control.reset();
    const r = await runMpf(['live', 'check'], env);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /✗ MPS_BASE_URL +http:\/\/127\.0\.0\.1:\d+ is a loopback address: not the live provider/);
    assert.match(r.stdout, /- provider call +not run: the settings above must pass first/);
    assert.match(r.stdout, /✗ not ready/);
    assert.deepEqual((await control.ledger()).requests, []);
  });

  test('with the stand-in option, refuses it by the mark on its answer, after one categories GET and nothing else', async () => {
    await control.reset();
    const r = await runMpf(['live', 'check', STAND_IN], env);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /✗ not the simulator +the answer carries x-mpf-simulator: no-money-moves: this is the provider simulator \(no money moves\), not the live provider: refused/);
    assert.match(r.stdout, /✗ tls +MPS_BASE_URL is http:\/\/: the live provider is reached over https only/);
    const { requests } = await control.ledger();
    assert.deepEqual(
      requests.map((q) => `${q.method} ${q.path}`),
      [`GET ${PROVIDER_PATHS.categories}`],
    );
  });
});

describe('mpf live check against a loopback HTTPS stand-in that answers like the provider', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-live-check-'));
  // Random values: a window of any 8 characters of them appearing in the output would be a leak.
  const creds = {
    secret: `sk_${randomBytes(16).toString('hex')}`,
    access: `at_${randomBytes(16).toString('hex')}`,
    merchant: `mr_${randomBytes(12).toString('hex')}`,
  };
  let trusted: ReturnType<typeof selfSigned>;
  let good: StandIn;
  let skewed: StandIn;
  let shortLived: StandIn;
  const servers: StandIn[] = [];

  /** The worker's variables as a secrets store hands them over (NAME_FILE), the stand-in's CA trusted. */
  const liveEnv = (url: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
    userEnv({
      MPS_BASE_URL: url,
      MPS_LIVE: '1',
      MPS_SECRET_KEY_FILE: path.join(dir, 'secret-key'),
      MPS_ACCESS_TOKEN_FILE: path.join(dir, 'access-token'),
      MPS_MERCHANT_REF_FILE: path.join(dir, 'merchant-ref'),
      MPS_CATEGORIES_BEARER: '1',
      NODE_EXTRA_CA_CERTS: trusted.certPath,
      ...extra,
    });

  const assertNoSecret = (output: string): void => {
    for (const value of Object.values(creds)) {
      for (let i = 0; i + 8 <= value.length; i++) assert.ok(!output.includes(value.slice(i, i + 8)), 'a part of a credential was printed');
    }
  };

  before(async () => {
    fs.writeFileSync(path.join(dir, 'secret-key'), `${creds.secret}\n`, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'access-token'), `${creds.access}\n`, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'merchant-ref'), `${creds.merchant}\n`, { mode: 0o600 });
    trusted = selfSigned(dir, 'stand-in', 30);
    const soon = selfSigned(dir, 'expiring', 7);
    good = await standIn(trusted);
    skewed = await standIn(trusted, 120_000);
    shortLived = await standIn(soon);
    servers.push(good, skewed, shortLived);
    // The short-lived certificate is trusted too (NODE_EXTRA_CA_CERTS names one file: both in it).
    fs.writeFileSync(trusted.certPath, `${trusted.cert}${soon.cert}`);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('passes: DNS, TLS, one GET of the categories with the credentials, the clock; no credential printed; exit 0', async () => {
    const before = good.seen.length;
    const r = await runMpf(['live', 'check', STAND_IN], liveEnv(good.url));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /! MPS_BASE_URL +https:\/\/127\.0\.0\.1:\d+: a loopback stand-in, accepted by --allow-loopback-stand-in/);
    assert.match(r.stdout, /✓ credentials +set \(MPS_SECRET_KEY from MPS_SECRET_KEY_FILE, MPS_ACCESS_TOKEN from MPS_ACCESS_TOKEN_FILE, MPS_MERCHANT_REF from MPS_MERCHANT_REF_FILE; never printed\)/);
    assert.match(r.stdout, /✓ dns +127\.0\.0\.1 \(loopback: the stand-in\)/);
    assert.match(r.stdout, /✓ tls +TLSv1\.3; subject O=mpf test, CN=provider stand-in; issuer O=mpf test, CN=provider stand-in; valid \S+ to \S+ \((29|30) days left\)/);
    assert.match(r.stdout, /✓ provider call +GET \/api\/v1\/utility\/categories: HTTP 200, 77 categories \(13 parents\)/);
    assert.match(r.stdout, /✓ not the simulator +no x-mpf-simulator mark on the answer/);
    assert.match(r.stdout, /✓ clock +provider's Date .*GMT; this host agrees with it/);
    assert.match(r.stdout, /Going live with this environment:\n {2}- the worker calls https:\/\/127\.0\.0\.1:\d+ \(MPS_LIVE=1\)/);
    assert.match(r.stdout, /✓ ready: every check passed/);
    assert.equal(r.stderr, '');
    const seen = good.seen.slice(before);
    assert.deepEqual(seen.map((q) => `${q.method} ${q.url}`), [`GET ${PROVIDER_PATHS.categories}`]);
    assert.equal(seen[0]!.headers.authorization, `Bearer ${creds.access}`);
    assert.equal(seen[0]!.headers['x-merchant-ref'], creds.merchant);
    assertNoSecret(r.stdout + r.stderr);
  });

  test('--json prints one object with every check and what going live turns on', async () => {
    const before = good.seen.length;
    const r = await runMpf(['live', 'check', STAND_IN, '--json'], liveEnv(good.url, { NODE_ENV: 'development' }));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const report = JSON.parse(r.stdout) as { ok: boolean; stand_in: boolean; base_url: string; checks: Check[]; enables: string[] };
    assert.equal(report.ok, true);
    assert.equal(report.stand_in, true);
    assert.equal(report.base_url, good.url);
    assert.deepEqual(
      report.checks.map((c) => c.id),
      ['environment', 'live_flag', 'base_url', 'credentials', 'node_env', 'dns', 'tls', 'categories', 'simulator', 'clock'],
    );
    const tls = checkOf(report, 'tls').details!;
    assert.equal(tls.verified, true);
    assert.equal(tls.protocol, 'TLSv1.3');
    assert.ok((tls.days_to_expiry as number) >= 29, String(tls.days_to_expiry));
    assert.deepEqual((checkOf(report, 'dns').details!.addresses as Array<{ address: string }>).map((a) => a.address), ['127.0.0.1']);
    assert.equal(checkOf(report, 'node_env').status, 'warn');
    assert.ok(report.enables.some((e) => /^NODE_ENV is not production/.test(e)));
    assert.ok(report.enables.some((e) => /^daily limits/.test(e)));
    assert.equal(good.seen.length - before, 1);
    assertNoSecret(r.stdout + r.stderr);
  });

  test('flags a stand-in whose Date is two minutes off: the clock check fails, after the one categories GET', async () => {
    const r = await runMpf(['live', 'check', STAND_IN, '--json'], liveEnv(skewed.url));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: Check[] };
    assert.equal(report.ok, false);
    const clock = checkOf(report, 'clock');
    assert.equal(clock.status, 'fail');
    assert.match(clock.summary, /this host is 1[12]\d(\.\d)? s behind .*fail beyond 30 s/);
    const skew = clock.details!.skew_seconds as number;
    assert.ok(skew > 118 && skew < 122, `skew ${skew}`);
    assert.equal(report.checks.filter((c) => c.status === 'fail').length, 1, JSON.stringify(report.checks));
    assert.deepEqual(skewed.seen.map((q) => `${q.method} ${q.url}`), [`GET ${PROVIDER_PATHS.categories}`]);
    // The human form says it too.
    const human = await runMpf(['live', 'check', STAND_IN], liveEnv(skewed.url));
    assert.equal(human.code, 1);
    assert.match(human.stdout, /✗ clock +provider's Date .*GMT; this host is 1[12]\d(\.\d)? s behind/);
    assertNoSecret(r.stdout + human.stdout + human.stderr);
  });

  test('warns about a certificate that expires within 14 days, and still passes', async () => {
    const r = await runMpf(['live', 'check', STAND_IN], liveEnv(shortLived.url));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /! tls +TLSv1\.3; .*\([67] days left\): expires in under 14 days/);
    assert.equal(shortLived.seen.length, 1);
  });

  test('fails on a certificate chain it does not trust, and sends no request', async () => {
    const before = good.seen.length;
    const env = liveEnv(good.url);
    delete env.NODE_EXTRA_CA_CERTS;
    const r = await runMpf(['live', 'check', STAND_IN], env);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /✗ tls +.*: not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\)/);
    assert.match(r.stdout, /- provider call +not run: no trusted TLS session/);
    assert.equal(good.seen.length, before);
  });

  test('names what is missing (MPS_LIVE, a credential), exits non-zero and dials nothing', async () => {
    const before = good.seen.length;
    const env = liveEnv(good.url);
    delete env.MPS_LIVE;
    delete env.MPS_SECRET_KEY_FILE;
    const r = await runMpf(['live', 'check', STAND_IN], env);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /✗ MPS_LIVE +MPS_LIVE: is not set: going live sets MPS_LIVE=1/);
    assert.match(r.stdout, /✗ credentials +MPS_SECRET_KEY \(or MPS_SECRET_KEY_FILE\): not set/);
    assert.match(r.stdout, /- dns +not run/);
    assert.equal(good.seen.length, before);
    assertNoSecret(r.stdout + r.stderr);
  });

  test('refuses the stand-in option under NODE_ENV=production, and dials nothing', async () => {
    const before = good.seen.length;
    const r = await runMpf(['live', 'check', STAND_IN], liveEnv(good.url, { NODE_ENV: 'production' }));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /✗ MPS_BASE_URL +--allow-loopback-stand-in: refused under NODE_ENV=production/);
    assert.equal(good.seen.length, before);
  });
});
