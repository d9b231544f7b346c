/**
 * The runbooks, run: every shell block of docs/operations/*.md and docs/integrating.md is run, in
 * page order, in the operator's shell that docs/operations/README.md describes, against one real
 * stack started once for every page: the test's Temporal dev server, the provider simulator, an
 * `mpf worker` process (versioned, as in production; its merchant events go to a loopback
 * receiver) and an `mpf gateway` process with a keyring
 * (an operator key `ops-ada` and a backend key `shop-backend`, their key files in ~/.mpf). The
 * stack's client settings are written where the demo writes its own (`.data/demo.env`, the same
 * variables), so a page's `set -a; . .data/demo.env; set +a` loads them; `mpf` is
 * `node bin/mpf.cjs`, and the provisioned Temporal CLI is on PATH.
 *
 * Each command must exit 0 (or the `# exit N` the page shows), and the output a page shows must
 * appear in order (`…` stands for anything; times, provider references and ids are any value of
 * their kind). A block marked `<!-- illustrative: why -->` is not run; every other shell block is.
 * `<!-- runbook-setup … -->` comments prepare what a page refers to (its flows, a worker to stop).
 * The test prints every block it ran (page:line) and every block it did not, with the reason.
 * MPF_RUNBOOK_PAGES=<page>,… runs only those pages; MPF_RUNBOOK_VERBOSE=1 prints what each printed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newKey } from '../../src/auth/keyring';
import { generateDevKeys } from '../../src/codec/keys';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../../src/simulator/options';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { freePort } from '../../src/temporal/ports';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { type MpfProcess, MPF_BIN, spawnMpf } from '../helpers/processes';
import { type Block, missingLine, parsePage, type Step } from '../helpers/runbooks';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '..', '..');
/** Every page; MPF_RUNBOOK_PAGES (comma-separated paths) runs only those, when writing a page. */
const ALL_PAGES = [
  ...fs
    .readdirSync(path.join(ROOT, 'docs', 'operations'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/operations/${f}`),
  'docs/integrating.md',
];
const PAGES = process.env.MPF_RUNBOOK_PAGES ? process.env.MPF_RUNBOOK_PAGES.split(',') : ALL_PAGES;
const PAGE_TIMEOUT_MS = 300_000;

let tmp: string;
let sim: RunningSimulator;
let receiver: RunningListener | undefined;
let worker: MpfProcess | undefined;
let gateway: MpfProcess | undefined;
let shellEnv: NodeJS.ProcessEnv;

function shellWord(v: string): string {
  return `'${v.replace(/'/g, `'\\''`)}'`;
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-runbooks-'));
  const home = path.join(tmp, 'home');
  fs.mkdirSync(path.join(home, '.mpf'), { recursive: true, mode: 0o700 });
  fs.mkdirSync(path.join(tmp, '.data'), { mode: 0o700 });
  const bin = path.join(tmp, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'mpf'), `#!/bin/sh\nexec ${shellWord(process.execPath)} ${shellWord(MPF_BIN)} "$@"\n`, { mode: 0o755 });
  const temporalCli = provisionTemporalCli();
  const PATH = [bin, path.dirname(temporalCli), path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':');

  const ops = newKey({ id: 'ops-ada', role: 'operator', label: 'Ada (ops)' });
  const backend = newKey({ id: 'shop-backend', role: 'backend', label: 'checkout service' });
  const keyring = path.join(tmp, 'gateway-keyring.json');
  fs.writeFileSync(keyring, JSON.stringify([ops.entry, backend.entry], null, 2), { mode: 0o600 });
  fs.writeFileSync(path.join(home, '.mpf', 'ops-ada.key'), ops.key, { mode: 0o600 });
  fs.writeFileSync(path.join(home, '.mpf', 'shop-backend.key'), backend.key, { mode: 0o600 });

  const temporal = await getTestTemporal();
  sim = await startSimulator();
  const eventSecret = generateSecret();
  receiver = await startEventListener({ secrets: [eventSecret] }); // the merchant's endpoint
  const gatewayPort = await freePort();
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const settings: Record<string, string> = {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue('rb-ops'),
    PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
    GATEWAY_PUBLIC_URL: gatewayUrl,
    GATEWAY_API_KEY_FILE: path.join(home, '.mpf', 'ops-ada.key'),
    GATEWAY_API_KEYS_FILE: keyring,
    CODEC_AUTH_TOKEN: `rb-codec-${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`,
    MPF_CODEC_ENDPOINT: `${gatewayUrl}/codec`,
    MPF_SIMULATOR_URL: sim.baseUrl,
    MERCHANT_WEBHOOK_SECRET: eventSecret,
    // The dev server runs headless: Temporal Web's address only shapes the links `mpf web views` prints.
    TEMPORAL_UI_URL: 'http://127.0.0.1:28233',
    MPS_BASE_URL: sim.baseUrl,
    MPS_SECRET_KEY: SIMULATOR_DEFAULT_CREDENTIALS.secretKey,
    MPS_ACCESS_TOKEN: SIMULATOR_DEFAULT_CREDENTIALS.accessToken,
    MPS_MERCHANT_REF: SIMULATOR_DEFAULT_CREDENTIALS.merchantRef,
    PATH,
  };
  const envFile = path.join(tmp, '.data', 'demo.env');
  fs.writeFileSync(
    envFile,
    ['# the runbook test stack\'s client settings (the demo\'s variables)', ...Object.entries(settings).map(([k, v]) => `${k}=${shellWord(v)}`), ''].join('\n'),
    { mode: 0o600 },
  );
  // The worker and the gateway get what they need; the operator's key file and the codec token only where used.
  const processEnv: Record<string, string> = { ...settings, HOME: home };
  for (const k of ['GATEWAY_API_KEY_FILE', 'GATEWAY_API_KEYS_FILE', 'CODEC_AUTH_TOKEN']) delete processEnv[k];
  worker = spawnMpf(['worker'], { ...processEnv, MERCHANT_WEBHOOK_URL: receiver.url, WORKER_METRICS_ADDRESS: '127.0.0.1:0' });
  await worker.waitFor(/worker: polling task queue /, 180_000);
  gateway = spawnMpf(['gateway', '--port', String(gatewayPort)], { ...processEnv, GATEWAY_API_KEYS_FILE: keyring, CODEC_AUTH_TOKEN: settings.CODEC_AUTH_TOKEN!, GATEWAY_METRICS_ADDRESS: '127.0.0.1:0' });
  await gateway.waitFor(/listening on http:\/\//, 180_000);
  shellEnv = { PATH, HOME: home, LANG: 'C.UTF-8', TMPDIR: os.tmpdir() };
});

after(async () => {
  await gateway?.kill('SIGTERM');
  await worker?.kill('SIGTERM');
  await sim?.close();
  await receiver?.close();
  await (await getTestTemporal()).shutdown();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const MARK = '@@mpf-runbook';

/** One bash per page: the operator's shell, then every step, each command between markers. */
function pageScript(steps: Step[]): string {
  const out = [
    'set +e',
    `printf '\\n${MARK} preamble start@@\\n'`,
    'set -a; . .data/demo.env; set +a',
    'export GW=$GATEWAY_PUBLIC_URL SIM=$MPF_SIMULATOR_URL',
    `printf '\\n${MARK} preamble rc %d@@\\n' $?`,
  ];
  steps.forEach((s, si) => {
    if (s.kind === 'setup') {
      out.push(`printf '\\n${MARK} ${si}.0 start@@\\n'`, s.script, `printf '\\n${MARK} ${si}.0 rc %d@@\\n' $?`);
    } else if (s.kind === 'block' && !s.illustrative) {
      s.commands.forEach((c, ci) => out.push(`printf '\\n${MARK} ${si}.${ci} start@@\\n'`, c.text, `printf '\\n${MARK} ${si}.${ci} rc %d@@\\n' $?`));
    }
  });
  return `${out.join('\n')}\n`;
}

/** Runs the page's script; its output per step.command id, and exit codes. Background processes it left are stopped. */
async function runPage(page: string, script: string): Promise<{ output: Map<string, { text: string; rest: string; rc?: number }>; all: string }> {
  // Each page in a directory of its own (its log files never meet another page's), with the shared .data.
  const dir = pageDir(page);
  fs.mkdirSync(dir, { recursive: true });
  if (!fs.existsSync(path.join(dir, '.data'))) fs.symlinkSync(path.join(tmp, '.data'), path.join(dir, '.data'));
  const file = path.join(dir, 'page.sh');
  fs.writeFileSync(file, script);
  const child = spawn('bash', ['--norc', '--noprofile', file], { cwd: dir, env: shellEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let all = '';
  child.stdout.on('data', (d: Buffer) => (all += d.toString()));
  child.stderr.on('data', (d: Buffer) => (all += d.toString()));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), PAGE_TIMEOUT_MS);
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, 300));
  await stopGroup(child.pid!); // what the page started in the background, gone before the next page
  const output = new Map<string, { text: string; rest: string; rc?: number }>();
  const re = new RegExp(`\\n${MARK} (\\S+) (start|rc (\\d+))@@\\n`, 'g');
  let m: RegExpExecArray | null;
  let open: { id: string; from: number } | undefined;
  while ((m = re.exec(all))) {
    if (m[2] === 'start') open = { id: m[1]!, from: m.index + m[0].length };
    else if (open && open.id === m[1]) {
      output.set(m[1]!, { text: all.slice(open.from, m.index), rest: all.slice(open.from), rc: Number(m[3]) });
      open = undefined;
    }
  }
  if (open) output.set(open.id, { text: all.slice(open.from), rest: all.slice(open.from) });
  return { output, all };
}

function pageDir(page: string): string {
  return path.join(tmp, 'pages', path.basename(page, '.md'));
}

/** SIGTERM to the page's process group, then waits (up to 60 s, then SIGKILL) until none is left: no port stays held. */
async function stopGroup(pgid: number): Promise<void> {
  const alive = (): boolean => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(-pgid, 'SIGTERM');
  for (const until = Date.now() + 60_000; alive() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 200));
  if (alive()) process.kill(-pgid, 'SIGKILL');
  for (const until = Date.now() + 10_000; alive() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 200));
}

/** The last lines of every log file a page wrote (`mpf worker > worker-3.log 2>&1 &`), for a failure's message. */
function pageLogs(page: string): string[] {
  const dir = pageDir(page);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort()
    .map((f) => `the page's ${f}, its last lines:\n${fs.readFileSync(path.join(dir, f), 'utf8').split('\n').slice(-25).join('\n')}`);
}

describe('the runbooks run literally against a real stack', () => {
  const ran: string[] = [];
  const notRun: string[] = [];

  for (const page of PAGES) {
    test(`every shell block of ${page} runs as written, or is marked illustrative`, { timeout: PAGE_TIMEOUT_MS + 60_000 }, async () => {
      const steps = parsePage(path.join(ROOT, page), page);
      const blocks = steps.filter((s): s is Block => s.kind === 'block');
      for (const u of steps.filter((s) => s.kind === 'untagged')) {
        assert.fail(`${page}:${u.line}: a block of shell commands with no language: tag it console (or bash), or mark it illustrative`);
      }
      for (const b of blocks.filter((b) => !b.illustrative && b.commands.length === 0)) {
        assert.fail(`${page}:${b.line}: a shell block with no command to run: mark it <!-- illustrative: why --> or show the commands with "$ "`);
      }
      if (process.env.MPF_RUNBOOK_VERBOSE) console.log(`${page}: ${blocks.length} shell blocks`);
      if (!steps.some((s) => s.kind === 'setup' || (s.kind === 'block' && !s.illustrative))) {
        for (const b of blocks) notRun.push(`${page}:${b.line}  illustrative: ${b.illustrative}`);
        return;
      }
      const { output, all } = await runPage(page, pageScript(steps));
      if (process.env.MPF_RUNBOOK_VERBOSE) console.log(all); // what each command printed, when writing a page
      const problems: string[] = [];
      const pre = output.get('preamble');
      if (pre?.rc !== 0) problems.push(`the operator's shell did not load: ${pre?.text ?? all}`);
      steps.forEach((s, si) => {
        if (s.kind === 'untagged') return;
        if (s.kind === 'setup') {
          const o = output.get(`${si}.0`);
          if (o?.rc !== 0) problems.push(`${page}:${s.line} runbook-setup exited ${o?.rc ?? '(never finished)'}:\n${o?.text ?? ''}`);
          return;
        }
        if (s.illustrative) {
          notRun.push(`${page}:${s.line}  illustrative: ${s.illustrative}`);
          return;
        }
        ran.push(`${page}:${s.line}  (${s.commands.length} command${s.commands.length === 1 ? '' : 's'})`);
        s.commands.forEach((c, ci) => {
          const o = output.get(`${si}.${ci}`);
          const where = `${page}:${s.line} $ ${c.text.split('\n')[0]}`;
          if (!o) return void problems.push(`${where}: never ran (an earlier command did not finish)`);
          if (o.rc !== c.exitCode) problems.push(`${where}: exited ${o.rc ?? '(never finished)'}, the page says ${c.exitCode}:\n${o.text}`);
          const missing = missingLine(c.expected, c.background ? o.rest : o.text);
          if (missing !== undefined) problems.push(`${where}: the page shows\n    ${missing}\n  which the output lacks:\n${o.text}`);
        });
      });
      if (problems.length > 0) problems.push(...pageLogs(page)); // why a process the page started did not do its part
      assert.deepEqual(problems, [], problems.join('\n\n'));
    });
  }

  test('the list of every block run and every block not run', () => {
    console.log(`runbooks: ${ran.length} blocks run:\n  ${ran.join('\n  ')}`);
    console.log(`runbooks: ${notRun.length} blocks not run:\n  ${notRun.join('\n  ')}`);
    assert.ok(ran.length > 0);
  });
});
