import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

/** An environment with no cached binary, no `temporal` and no Go on PATH, and no download. */
function bareEnv(): NodeJS.ProcessEnv {
  return {
    HOME: os.homedir(),
    PATH: path.dirname(process.execPath) + ':/bin',
    MPF_TEMPORAL_CACHE_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-empty-cache-')),
    MPF_TEMPORAL_NO_DOWNLOAD: '1',
  };
}

describe('Temporal CLI provisioning', () => {
  test('reuses the cached or installed binary and prints its path last', () => {
    const r = spawnSync('bash', ['--norc', '--noprofile', 'scripts/provision-temporal.sh'], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const bin = r.stdout.trim().split('\n').pop()!;
    const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    assert.match(v.stdout, /temporal version/);
  });

  test('fails with a message saying how to install it when there is no binary and no Go', () => {
    const env = bareEnv();
    assert.equal(spawnSync('bash', ['--norc', '--noprofile', '-c', 'command -v go || command -v temporal'], { env }).status, 1, 'test env has neither');
    const r = spawnSync('bash', ['--norc', '--noprofile', 'scripts/provision-temporal.sh'], { cwd: root, env, encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.equal(r.stdout.trim(), '', 'no path printed');
    assert.match(r.stderr, /no Temporal CLI could be provisioned/);
    assert.match(r.stderr, /go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
    assert.match(r.stderr, /TEMPORAL_CLI_PATH/);
  });

  test('makes the test command fail loudly, never skip, when no server can be provisioned', () => {
    const env = bareEnv();
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/run-tests.ts', 'test/flows/foundation.test.ts'], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.notEqual(r.status, 0, 'the run fails');
    assert.match(r.stderr, /TEST RUN FAILED: .*no Temporal CLI could be provisioned/s);
    assert.doesNotMatch(r.stdout, /passed/);
  });

  test('refuses a TEMPORAL_CLI_PATH that is not a Temporal CLI', () => {
    const r = spawnSync('bash', ['--norc', '--noprofile', 'scripts/provision-temporal.sh'], {
      cwd: root,
      env: { ...bareEnv(), TEMPORAL_CLI_PATH: '/bin/false' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /TEMPORAL_CLI_PATH=\/bin\/false is not an executable Temporal CLI/);
  });
});
