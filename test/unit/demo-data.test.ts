import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateDevKeys, parseEncryptionKeys } from '../../src/codec/keys';
import { demoDataDir, demoSecrets } from '../../src/starter/demo/data';
import { demoEnvFile } from '../../src/starter/demo/client-env';

const dirs: string[] = [];
function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-demo-data-unit-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("the demo's data folder keeps the keys its database is sealed under", () => {
  test('the first run makes the keys and the events secret and keeps them (mode 0600); every later run gets the same', () => {
    const dir = tmpDir();
    const said: string[] = [];
    const first = demoSecrets({}, dir, (l) => said.push(l));
    assert.doesNotThrow(() => parseEncryptionKeys(first.keys));
    assert.match(first.eventSecret, /^whsec_/);
    assert.equal(fs.statSync(path.join(dir, 'demo-keys.env')).mode & 0o777, 0o600);
    const again = demoSecrets({}, dir, (l) => said.push(l));
    assert.deepEqual(again, first);
    assert.deepEqual(said, []);
  });

  test('a database whose keys are gone is moved aside, said so, and the run starts afresh with new keys', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'demo-temporal.db'), 'old');
    fs.writeFileSync(path.join(dir, 'demo-temporal.db-wal'), 'old wal');
    const said: string[] = [];
    const s = demoSecrets({}, dir, (l) => said.push(l));
    assert.equal(said.length, 1);
    assert.match(said[0]!, /demo-temporal\.db was sealed under payload keys that are gone \(no \S+demo-keys\.env\): no run can read it, so it is moved to \S+demo-temporal\.unreadable-\d{8}T\d{6}\.db and the demo starts afresh/);
    assert.equal(fs.existsSync(path.join(dir, 'demo-temporal.db')), false);
    const files = fs.readdirSync(dir).sort();
    assert.ok(files.some((f) => /^demo-temporal\.unreadable-\d{8}T\d{6}\.db$/.test(f)), files.join(' '));
    assert.ok(files.some((f) => /^demo-temporal\.unreadable-\d{8}T\d{6}\.db-wal$/.test(f)), files.join(' '));
    assert.ok(fs.readFileSync(path.join(dir, 'demo-keys.env'), 'utf8').includes(s.keys));
  });

  test('PAYLOAD_ENCRYPTION_KEYS given seals; the kept keys still read what earlier runs sealed; the database is kept', () => {
    const dir = tmpDir();
    const kept = demoSecrets({}, dir, () => undefined);
    fs.writeFileSync(path.join(dir, 'demo-temporal.db'), 'db');
    const given = generateDevKeys('mine');
    const s = demoSecrets({ PAYLOAD_ENCRYPTION_KEYS: given }, dir, () => undefined);
    const ring = parseEncryptionKeys(s.keys);
    assert.equal(ring.activeKeyId, 'mine');
    assert.deepEqual([...ring.keys.keys()], ['mine', parseEncryptionKeys(kept.keys).activeKeyId]);
    assert.match(s.keysFrom, /^PAYLOAD_ENCRYPTION_KEYS, and the keys kept in \S+ to read earlier runs$/);
    assert.ok(fs.existsSync(path.join(dir, 'demo-temporal.db')));
  });

  test('a keys file that cannot be read as keys is refused naming the file and how to start afresh', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'demo-keys.env'), "PAYLOAD_ENCRYPTION_KEYS='nonsense'\n", { mode: 0o600 });
    assert.throws(() => demoSecrets({}, dir, () => undefined), /demo-keys\.env: PAYLOAD_ENCRYPTION_KEYS: entry 1 is not of the form keyId:base64key; restore the file, or start afresh by removing it and \S*demo-temporal\.db$/);
  });

  test('MPF_DEMO_DATA_DIR moves the data folder, and the client settings with it unless MPF_DEMO_ENV_FILE says otherwise', () => {
    assert.equal(demoDataDir({ MPF_DEMO_DATA_DIR: '/srv/demo' }), '/srv/demo');
    assert.match(demoDataDir({}), /\/\.data$/);
    assert.equal(demoEnvFile({ MPF_DEMO_DATA_DIR: '/srv/demo' }), '/srv/demo/demo.env');
    assert.equal(demoEnvFile({ MPF_DEMO_DATA_DIR: '/srv/demo', MPF_DEMO_ENV_FILE: '/tmp/x.env' }), '/tmp/x.env');
  });
});
