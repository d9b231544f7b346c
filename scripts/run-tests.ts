/**
 * The test runner. Tests live in three tiers, one folder each:
 *
 *   test/unit/   no server: pure decisions, schemas, codec, contract, provider client and simulator
 *                on loopback, replay of recorded histories (npm run test:unit, well under a minute)
 *   test/flows/  workflows, client and gateway on a real Temporal dev server (npm run test:flows)
 *   test/e2e/    real processes: mpf worker/gateway/demo, browser, PostgreSQL cluster, soak,
 *                compose, the packed package (npm run test:e2e)
 *
 * A tier that needs a server provisions the Temporal CLI (failing loudly with the script's message
 * if it cannot) and starts ONE real dev server for the run; the unit tier starts none and needs no
 * Chromium. Prints a closing "N passed, N failed" line; a skipped test fails the run.
 *
 *   npm test                               every tier
 *   npm test -- --tier unit                one tier (unit, flows, e2e)
 *   npm test -- test/flows/foo.test.ts     only these files
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { PROJECT_ROOT } from '../src/temporal/provision';

function provisionChromium(): string {
  const r = spawnSync('bash', ['--norc', '--noprofile', path.join(PROJECT_ROOT, 'scripts', 'provision-chromium.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const found = r.stdout.trim().split('\n').pop();
  if (r.status !== 0 || !found) throw new Error('Chromium could not be provisioned (see above)');
  return found;
}

function findTests(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' || e.name === 'helpers' ? [] : findTests(p);
    return e.name.endsWith('.test.ts') ? [path.relative(PROJECT_ROOT, p)] : [];
  });
}

const TIERS = ['unit', 'flows', 'e2e'] as const;

/**
 * A test file that hangs must fail, not eat the CI's time with its output unprinted (the runner
 * prints files' results in order, so one stuck file hides every file after it). A test, hook or
 * suite with no timeout of its own fails after MPF_TEST_TIMEOUT_MS (default 30 min; the longest
 * file, the soak's, takes about 8), and so does a file whose tests are done but whose process
 * does not exit (a handle left open). `--test-force-exit` would end the latter sooner, but it
 * exits before the TAP file is written, and the closing count is read from it.
 * Node 20.11 brought `--test-timeout`; an older Node runs without it.
 */
function hangGuard(env: NodeJS.ProcessEnv): string[] {
  const timeoutMs = Number(env.MPF_TEST_TIMEOUT_MS ?? 30 * 60_000);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error(`MPF_TEST_TIMEOUT_MS must be a positive whole number of milliseconds (got ${env.MPF_TEST_TIMEOUT_MS})`);
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  return major > 20 || (major === 20 && minor >= 11) ? [`--test-timeout=${timeoutMs}`] : [];
}

function selectFiles(argv: string[]): { files: string[]; needsServer: boolean } {
  const i = argv.indexOf('--tier');
  if (i >= 0) {
    const tier = argv[i + 1];
    if (!TIERS.includes(tier as (typeof TIERS)[number])) throw new Error(`--tier must be one of ${TIERS.join(', ')} (got ${tier ?? 'nothing'})`);
    const files = findTests(path.join(PROJECT_ROOT, 'test', tier!)).sort();
    return { files, needsServer: tier !== 'unit' };
  }
  const files = argv.length ? argv : findTests(path.join(PROJECT_ROOT, 'test')).sort();
  const unitDir = `test${path.sep}unit${path.sep}`;
  return { files, needsServer: files.some((f) => !path.normalize(f).startsWith(unitDir)) };
}

async function main(): Promise<number> {
  const { files, needsServer } = selectFiles(process.argv.slice(2));
  if (files.length === 0) throw new Error('no test files selected');
  const started = Date.now();
  let server: Awaited<ReturnType<typeof startDevServer>> | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (!needsServer) {
    console.log('unit tier: no Temporal server, no browser');
  } else if ((env.CHROMIUM_PATH = provisionChromium()) && process.env.TEMPORAL_ADDRESS) {
    console.log(`using the Temporal server at TEMPORAL_ADDRESS=${process.env.TEMPORAL_ADDRESS}`);
    env.MPF_TEST_TEMPORAL_ADDRESS = process.env.TEMPORAL_ADDRESS;
  } else {
    server = await startDevServer();
    console.log(
      `Temporal dev server: ${server.binary} (pid ${server.pid}) listening on ${server.address}, ready in ${Date.now() - started} ms`,
    );
    env.MPF_TEST_TEMPORAL_ADDRESS = server.address;
    env.MPF_TEST_TEMPORAL_PID = String(server.pid);
  }
  const resultsDir = path.join(PROJECT_ROOT, '.cache', 'test-results');
  fs.mkdirSync(resultsDir, { recursive: true });
  // One file per run: two runs in one checkout must not read each other's results.
  const tap = path.join(resultsDir, `results-${process.pid}.tap`);
  const concurrency = process.env.MPF_TEST_CONCURRENCY ?? '2';
  const code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--import', 'tsx',
        '--test',
        `--test-concurrency=${concurrency}`,
        ...hangGuard(process.env),
        '--test-reporter=spec', '--test-reporter-destination=stdout',
        '--test-reporter=tap', `--test-reporter-destination=${tap}`,
        ...files,
      ],
      { cwd: PROJECT_ROOT, env, stdio: 'inherit' },
    );
    const forward = (sig: NodeJS.Signals) => child.kill(sig);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)));
  });
  await server?.stop();
  const text = fs.existsSync(tap) ? fs.readFileSync(tap, 'utf8') : '';
  if (text) fs.writeFileSync(path.join(resultsDir, 'results.tap'), text); // the last run's, for people and CI logs
  fs.rmSync(tap, { force: true });
  const count = (k: string) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  const [pass, fail, skipped] = [count('pass'), count('fail') + count('cancelled'), count('skipped') + count('todo')];
  console.log(`test files: ${files.length}, wall time ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`tests: ${pass} passed, ${fail} failed, ${skipped} skipped`);
  if (pass === 0) {
    console.error('no test passed: treating the run as failed');
    return 1;
  }
  if (skipped > 0) {
    console.error('a test was skipped: this project never skips (see README); failing the run');
    return 1;
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`\nTEST RUN FAILED: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
