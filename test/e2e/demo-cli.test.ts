/**
 * The first hour with the demo, as the README tells it: start the interactive demo (`mpf demo`, a
 * real process), load its client settings with the one documented line
 * (`set -a; . .data/demo.env; set +a`) in a shell that has nothing else, and run the README's
 * `mpf` commands against the running demo: swap start (its pin_url on the demo's gateway), status,
 * PIN on stdin, cancel, link create, the link paid at the simulator and its notification reaching
 * the demo's gateway, link status, categories.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createControlClient } from '../../src/simulator/control-client';
import { eventually } from '../helpers/stack';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import { uniqueRef } from '../helpers/fixtures';
import { getTestTemporal } from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '..', '..');
let tmp: string;
let envFile: string;
let demo: MpfProcess | undefined;
let simulatorUrl: string;
const taskQueue = `demo-cli-${process.pid}-${Date.now().toString(36)}`;

/** `set -a; . <env file>; set +a; node bin/mpf.cjs …` in a shell with only PATH and HOME, as a user types it. */
function mpf(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'bash',
      ['-c', 'set -a; . "$1"; set +a; shift; exec node bin/mpf.cjs "$@"', 'mpf', envFile, ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, timeout: 90_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

/** `set -a; . <env file>; set +a; <command>` in a shell whose PATH has no Temporal CLI; "$2" is `arg`. */
function freshShell(command: string, arg: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', `set -a; . "$1"; set +a; ${command}`, 'sh', envFile, arg], { cwd: ROOT, env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-demo-cli-'));
  envFile = path.join(tmp, 'demo.env');
  const temporal = await getTestTemporal();
  demo = spawnMpf(['demo'], {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    MPF_DEMO_ENV_FILE: envFile,
    PAYLOAD_ENCRYPTION_KEYS: '', // the demo generates this run's keys and writes them to the file
  });
  await demo.waitFor(/\[demo\] checkout: .*simulator control API (http:\/\/\S+)\/_sim\)/, 180_000);
  simulatorUrl = /simulator control API (http:\/\/\S+)\/_sim/.exec(demo.output())![1]!;
});

after(async () => {
  await demo?.kill('SIGINT');
  await demo?.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
  await (await getTestTemporal()).shutdown();
});

describe('the README commands against the running interactive demo', () => {
  test('the demo writes its client settings (0600), says the wallet PIN and the line to load them, and honours TEMPORAL_TASK_QUEUE', () => {
    const out = demo!.output();
    assert.equal(fs.statSync(envFile).mode & 0o777, 0o600);
    const text = fs.readFileSync(envFile, 'utf8');
    const settings = Object.fromEntries([...text.matchAll(/^([A-Z_]+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
    for (const key of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE', 'PAYLOAD_ENCRYPTION_KEYS', 'GATEWAY_PUBLIC_URL', 'GATEWAY_API_KEY', 'CODEC_AUTH_TOKEN', 'MPF_CODEC_ENDPOINT']) {
      assert.ok(settings[key], `${key} in the file`);
    }
    assert.equal(settings.TEMPORAL_TASK_QUEUE, taskQueue);
    assert.match(out, new RegExp(`worker polling task queue ${taskQueue}`));
    assert.match(out, new RegExp(`client settings: set -a; \\. ${envFile.replace(/[.]/g, '\\.')}; set \\+a`));
    assert.match(out, /wallet PIN: +1234 for every user/);
    assert.match(out, new RegExp(`gateway: +${settings.GATEWAY_PUBLIC_URL!.replace(/\./g, '\\.')} \\(API reference .*/docs`));
    // The secrets are in the file only, never on the console.
    for (const key of ['PAYLOAD_ENCRYPTION_KEYS', 'GATEWAY_API_KEY', 'CODEC_AUTH_TOKEN']) {
      for (const part of settings[key]!.split(/[,:]/).filter((p) => p.length >= 16)) assert.ok(!out.includes(part), `${key} printed`);
    }
  });

  test('mpf swap start, status, pin (on stdin) and cancel work against it, with pin_url on the demo gateway', { timeout: 240_000 }, async () => {
    const publicUrl = /^GATEWAY_PUBLIC_URL='([^']+)'$/m.exec(fs.readFileSync(envFile, 'utf8'))![1]!;
    const ref = uniqueRef('readme-swap');
    const started = await mpf(['swap', 'start', '--user-ref', 'demo-user', '--from', 'USD', '--to', 'NGN', '--amount', '10', '--txn-ref', ref]);
    assert.equal(started.code, 0, `${started.stdout}\n${started.stderr}`);
    assert.match(started.stdout, new RegExp(`swap swap-${ref}: awaiting_pin`));
    const pinUrl = /pin_url\s+(\S+)/.exec(started.stdout)?.[1];
    assert.ok(pinUrl?.startsWith(`${publicUrl}/pin/swap-${ref}#token=`), `pin_url ${pinUrl} is on the demo's gateway ${publicUrl}`);
    const page = await fetch(pinUrl!.replace(/#.*/, ''));
    assert.equal(page.status, 200, 'the PIN page answers where pin_url points');

    const status = await mpf(['swap', 'status', `swap-${ref}`]);
    assert.match(status.stdout, new RegExp(`swap swap-${ref}: awaiting_pin`));
    const pin = await mpf(['swap', 'pin', `swap-${ref}`], '1234\n');
    assert.equal(pin.code, 0, `${pin.stdout}\n${pin.stderr}`);
    assert.match(pin.stdout, /^confirmed$/m);

    const other = uniqueRef('readme-cancel');
    assert.equal((await mpf(['swap', 'start', '--user-ref', 'demo-user', '--from', 'EUR', '--to', 'NGN', '--amount', '5', '--txn-ref', other])).code, 0);
    const cancelled = await mpf(['swap', 'cancel', `swap-${other}`]);
    assert.equal(cancelled.code, 0, `${cancelled.stdout}\n${cancelled.stderr}`);
    assert.match(cancelled.stdout, new RegExp(`swap swap-${other}: cancelled`));
  });

  test('mpf link create and status work against it; the payment notified to the demo gateway marks the link paid', { timeout: 240_000 }, async () => {
    const ref = uniqueRef('readme-link');
    const created = await mpf([
      'link', 'create', '--user-ref', 'demo-user', '--txn-merchant-ref', ref, '--amount', '2500',
      '--full-name', 'Ada Lovelace', '--email', 'ada@example.com', '--phone', '+2348000000000', '--redirect-url', 'https://shop.example.com/return',
    ]);
    assert.equal(created.code, 0, `${created.stdout}\n${created.stderr}`);
    assert.match(created.stdout, new RegExp(`payment link paylink-${ref}: awaiting_payment`));
    const paymentRef = /payment_ref\s+(\S+)/.exec(created.stdout)![1]!;
    // The customer pays at the simulator's checkout; the provider notifies the notification_url the CLI built.
    await createControlClient(simulatorUrl).completeLink(paymentRef);
    const paid = await eventually(async () => {
      const r = await mpf(['link', 'status', `paylink-${ref}`]);
      return r.stdout.includes(`paylink-${ref}: paid`) ? r.stdout : undefined;
    }, 60_000, 'the link to be paid');
    assert.match(paid, /notifications \(\d+\):\n\s+\S+\s+paid \(applied\)/);
  });

  test("the README's decode command works as written: the settings put the Temporal CLI on PATH and the codec decodes", { timeout: 120_000 }, async () => {
    const ref = uniqueRef('readme-decode');
    assert.equal((await mpf(['swap', 'start', '--user-ref', 'demo-user', '--from', 'USD', '--to', 'NGN', '--amount', '7', '--txn-ref', ref])).code, 0);
    // A fresh shell: no temporal on this PATH; the settings file must provide it.
    const show = (extra: string) => freshShell(`temporal workflow show -w "$2"${extra} --codec-endpoint "$MPF_CODEC_ENDPOINT" --codec-auth "Bearer $CODEC_AUTH_TOKEN"`, `swap-${ref}`);
    const shown = await show('');
    assert.equal(shown.code, 0, `${shown.stdout}\n${shown.stderr}`);
    assert.match(shown.stdout, /WorkflowExecutionStarted/);
    // The same with -o json shows the payloads, decoded by the gateway's codec server.
    const json = await show(' -o json');
    assert.equal(json.code, 0, json.stderr);
    const decoded = [...json.stdout.matchAll(/"data": "([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'));
    assert.ok(decoded.some((d) => d.includes(ref)), 'the decoded input names the swap');
    assert.doesNotMatch(json.stdout, /"encoding":\s*"YmluYXJ5L2VuY3J5cHRlZA==/, 'no payload left encrypted');
  });

  test('the settings carry the merchant events secret, the simulator and the demo prints metrics and verified events', () => {
    const text = fs.readFileSync(envFile, 'utf8');
    assert.match(text, /^MERCHANT_WEBHOOK_SECRET='whsec_[^']+'$/m);
    assert.match(text, /^MPF_SIMULATOR_URL='http:\/\/127\.0\.0\.1:\d+'$/m);
    const out = demo!.output();
    assert.match(out, /metrics \(Prometheus\): worker http:\/\/127\.0\.0\.1:\d+\/metrics, gateway http:\/\/127\.0\.0\.1:\d+\/metrics/);
    assert.match(out, /merchant event received: swap\.confirmed \S+, signature verified/);
    assert.match(out, /merchant event received: payment_link\.paid \S+, signature verified/);
  });

  test('mpf categories --tree works against it', { timeout: 120_000 }, async () => {
    const r = await mpf(['categories', '--tree']);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /13\.0/);
  });
});
