/**
 * `npm test`: provisions the Temporal CLI (fails loudly with the script's message if it cannot),
 * starts ONE real Temporal dev server for the whole run, runs every test/**\/*.test.ts file with
 * node's test runner, stops the server, and prints a closing "N passed, N failed" line.
 *
 *   npm test                      all tests
 *   npm test -- test/foo.test.ts  only these files
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

async function main(): Promise<number> {
  const files = process.argv.slice(2).length ? process.argv.slice(2) : findTests(path.join(PROJECT_ROOT, 'test')).sort();
  const started = Date.now();
  let server: Awaited<ReturnType<typeof startDevServer>> | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  env.CHROMIUM_PATH = provisionChromium();
  if (process.env.TEMPORAL_ADDRESS) {
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
