/**
 * The process configuration (src/config/env.ts): every bad value is an error naming the variable
 * (never echoing the value), every non-loopback provider needs MPS_LIVE (there is no host
 * allowlist), every variable can come from a NAME_FILE, and the merchant-event rules the feature
 * registers apply in every process that reads the environment.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadEnv } from '../../src/config/env';

function configError(source: NodeJS.ProcessEnv): ConfigError {
  try {
    loadEnv(source);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  assert.fail('loadEnv accepted the configuration');
}

describe('provider address safety', () => {
  test('refuses a non-loopback MPS_BASE_URL without MPS_LIVE, naming MPS_BASE_URL', () => {
    const err = configError({ MPS_BASE_URL: 'https://api.provider.example' });
    assert.match(err.message, /MPS_BASE_URL: is not a loopback address/);
    assert.match(err.message, /MPS_LIVE=1/);
  });

  test('accepts loopback addresses without MPS_LIVE', () => {
    for (const url of ['http://127.0.0.1:8090', 'http://localhost:1', 'http://[::1]:8090', 'http://127.1.2.3']) {
      assert.equal(loadEnv({ MPS_BASE_URL: url }).MPS_BASE_URL, url);
    }
  });

  test('accepts a non-loopback provider with MPS_LIVE=1', () => {
    const env = loadEnv({ MPS_BASE_URL: 'https://api.provider.example', MPS_LIVE: '1' });
    assert.equal(env.MPS_LIVE, true);
  });

  test('treats a simulator service name like any other non-loopback host: refused without MPS_LIVE, accepted with it', () => {
    const err = configError({ MPS_BASE_URL: 'http://simulator:8090' });
    assert.match(err.message, /^invalid configuration: MPS_BASE_URL: is not a loopback address/);
    assert.ok(!err.message.includes('simulator:8090'), 'the message echoes the value');
    for (const off of ['0', 'false']) configError({ MPS_BASE_URL: 'http://simulator:8090', MPS_LIVE: off });
    assert.equal(loadEnv({ MPS_BASE_URL: 'http://simulator:8090', MPS_LIVE: '1' }).MPS_LIVE, true);
  });

  test('offers no provider host allowlist (MPS_ALLOW_HOSTS is not a setting)', () => {
    const err = configError({ MPS_BASE_URL: 'http://simulator:8090', MPS_ALLOW_HOSTS: 'simulator' });
    assert.match(err.message, /MPS_BASE_URL: is not a loopback address/);
    assert.ok(!('MPS_ALLOW_HOSTS' in loadEnv({ MPS_ALLOW_HOSTS: 'simulator' })));
  });
});

describe('values and their errors', () => {
  test('names GATEWAY_PORT when it is not a port', () => {
    for (const bad of ['eighty', '70000', '-1', '80.5']) {
      const err = configError({ GATEWAY_PORT: bad });
      assert.match(err.message, /GATEWAY_PORT:/, bad);
      assert.ok(!err.message.includes(bad), `the message echoes the value ${bad}`);
    }
    assert.equal(loadEnv({ GATEWAY_PORT: '0' }).GATEWAY_PORT, 0);
    assert.equal(loadEnv({}).GATEWAY_PORT, 8080);
  });

  test('takes the worker cache bound and the swap notification wait, naming each when bad', () => {
    assert.equal(loadEnv({ WORKER_MAX_CACHED_WORKFLOWS: '250' }).WORKER_MAX_CACHED_WORKFLOWS, 250);
    assert.equal(loadEnv({}).WORKER_MAX_CACHED_WORKFLOWS, undefined);
    assert.match(configError({ WORKER_MAX_CACHED_WORKFLOWS: 'lots' }).message, /WORKER_MAX_CACHED_WORKFLOWS:/);
    assert.equal(loadEnv({}).SWAP_NOTIFICATION_WAIT_SECONDS, 60);
    assert.equal(loadEnv({ SWAP_NOTIFICATION_WAIT_SECONDS: '0' }).SWAP_NOTIFICATION_WAIT_SECONDS, 0);
    assert.match(configError({ SWAP_NOTIFICATION_WAIT_SECONDS: '-5' }).message, /SWAP_NOTIFICATION_WAIT_SECONDS:/);
  });

  test('never echoes a rejected secret', () => {
    const err = configError({ GATEWAY_API_KEY: 'short-secret', CODEC_AUTH_TOKEN: 'tiny-token' });
    assert.match(err.message, /GATEWAY_API_KEY: must be at least 16 characters/);
    assert.match(err.message, /CODEC_AUTH_TOKEN: must be at least 16 characters/);
    assert.ok(!err.message.includes('short-secret') && !err.message.includes('tiny-token'), err.message);
  });

  test('reads the codec server and simulator settings as lists', () => {
    const env = loadEnv({
      CODEC_CORS_ORIGINS: 'http://localhost:8233, http://127.0.0.1:8233',
      SIMULATOR_NOTIFICATION_ALLOW_HOSTS: 'gateway',
      SIMULATOR_CHECKOUT_PUBLIC_URL: 'http://localhost:8091',
      GATEWAY_NOTIFICATION_BASE_URL: 'http://gateway:8080',
    });
    assert.deepEqual(env.CODEC_CORS_ORIGINS, ['http://localhost:8233', 'http://127.0.0.1:8233']);
    assert.deepEqual(env.SIMULATOR_NOTIFICATION_ALLOW_HOSTS, ['gateway']);
    assert.equal(env.SIMULATOR_CHECKOUT_PUBLIC_URL, 'http://localhost:8091');
    assert.equal(env.GATEWAY_NOTIFICATION_BASE_URL, 'http://gateway:8080');
    assert.deepEqual(loadEnv({}).CODEC_CORS_ORIGINS, []);
    assert.match(configError({ CODEC_CORS_ORIGINS: 'localhost:8233' }).message, /CODEC_CORS_ORIGINS:/);
    assert.match(configError({ SIMULATOR_CHECKOUT_PUBLIC_URL: 'not a url' }).message, /SIMULATOR_CHECKOUT_PUBLIC_URL:/);
  });
});

describe('NAME_FILE variables', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'mpf-env-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('reads a secret from NAME_FILE, trimming the trailing newline', () => {
    const file = path.join(dir, 'api_key');
    writeFileSync(file, 'a-gateway-api-key-of-32-characters\n');
    assert.equal(loadEnv({ GATEWAY_API_KEY_FILE: file }).GATEWAY_API_KEY, 'a-gateway-api-key-of-32-characters');
  });

  test('prefers NAME over NAME_FILE when both are set', () => {
    const file = path.join(dir, 'secret');
    writeFileSync(file, 'from-the-file\n');
    assert.equal(loadEnv({ MPS_SECRET_KEY: 'from-the-env', MPS_SECRET_KEY_FILE: file }).MPS_SECRET_KEY, 'from-the-env');
  });

  test('reads the variables added for compose from files too', () => {
    const hosts = path.join(dir, 'hosts');
    writeFileSync(hosts, 'gateway\n');
    const token = path.join(dir, 'codec');
    writeFileSync(token, 'codec-token-of-enough-length\n');
    const env = loadEnv({ SIMULATOR_NOTIFICATION_ALLOW_HOSTS_FILE: hosts, CODEC_AUTH_TOKEN_FILE: token });
    assert.deepEqual(env.SIMULATOR_NOTIFICATION_ALLOW_HOSTS, ['gateway']);
    assert.equal(env.CODEC_AUTH_TOKEN, 'codec-token-of-enough-length');
  });

  test('names NAME_FILE when the file cannot be read, without its contents', () => {
    const err = configError({ PAYLOAD_ENCRYPTION_KEYS_FILE: path.join(dir, 'missing') });
    assert.match(err.message, /^PAYLOAD_ENCRYPTION_KEYS_FILE: cannot read .*missing \(ENOENT\)$/);
  });

  test('validates a value read from a file like any other', () => {
    const file = path.join(dir, 'port');
    writeFileSync(file, 'not-a-port\n');
    assert.match(configError({ GATEWAY_PORT_FILE: file }).message, /GATEWAY_PORT:/);
  });
});

describe('the merchant-event rules, registered by the feature', () => {
  /** What loadEnv says of a malformed signing secret in a fresh process that first required `entry`. */
  async function verdictAfter(entry: string): Promise<string> {
    const script = `require(${JSON.stringify(entry)});
      const { loadEnv } = require('./src/config/env');
      try { loadEnv({ MERCHANT_WEBHOOK_SECRET: 'not-a-secret' }); process.stdout.write('accepted'); }
      catch (e) { process.stdout.write(e.message); }`;
    const run = promisify(execFile);
    return (await run(process.execPath, ['--import', 'tsx', '-e', script], { cwd: path.join(__dirname, '..', '..'), encoding: 'utf8', timeout: 60_000 })).stdout;
  }

  test('apply in every process that reads the environment: worker, gateway, CLI, demo and the SDK', async () => {
    const entries = ['./src/worker-main', './src/starter/gateway/main', './src/starter/cli/program', './src/starter/demo/run', './src/index'];
    const verdicts = await Promise.all(entries.map(verdictAfter));
    entries.forEach((entry, i) => assert.match(verdicts[i]!, /MERCHANT_WEBHOOK_SECRET: must be whsec_/, entry));
  });

  test('are the feature\'s: config alone does not know them (so the check above can fail)', async () => {
    assert.equal(await verdictAfter('./src/config/env'), 'accepted');
  });
});
