/**
 * The envconfig TLS settings of a Temporal client (src/temporal/connection.ts), without a Temporal
 * server: a setting that names no readable file, or a certificate without its key, stops the
 * client before it connects, naming the setting; a frontend that is not TLS at all, or nothing
 * listening, is told apart from a TLS problem by the client's own handshake. (The refusals by a
 * real mTLS frontend are tested against `mpf cluster up` in test/e2e/cluster.test.ts.)
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/config/env';
import { temporalTargetFromEnv, tlsDiagnosis } from '../../src/temporal/connection';

const TLS_VARS = ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_NAME'];

/** Runs `fn` with these TLS variables in process.env (which envconfig reads), then restores it. */
function withTlsEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = Object.fromEntries(TLS_VARS.map((k) => [k, process.env[k]]));
  for (const k of TLS_VARS) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('the Temporal TLS settings of a client', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-tls-settings-'));
  const pem = path.join(dir, 'cert.pem');
  fs.writeFileSync(pem, '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('a TLS setting that names a file that does not exist is a configuration error naming that setting, never a plain-text connection', () => {
    const missing = path.join(dir, 'nope.pem');
    assert.throws(
      () => withTlsEnv({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing }, () => temporalTargetFromEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' })),
      (e: unknown) => e instanceof ConfigError && e.message === `TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read ${missing} (ENOENT); it must name a PEM file this process can read`,
    );
  });

  test('a client certificate without its key (or a key without its certificate) is refused, naming the missing setting', () => {
    assert.throws(
      () => withTlsEnv({ TEMPORAL_TLS_CLIENT_CERT_PATH: pem }, () => temporalTargetFromEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' })),
      (e: unknown) => e instanceof ConfigError && /^TEMPORAL_TLS_CLIENT_KEY_PATH: not set; a client certificate needs both/.test(e.message),
    );
    assert.throws(
      () => withTlsEnv({ TEMPORAL_TLS_CLIENT_KEY_PATH: pem }, () => temporalTargetFromEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' })),
      (e: unknown) => e instanceof ConfigError && /^TEMPORAL_TLS_CLIENT_CERT_PATH: not set/.test(e.message),
    );
  });

  test('without TLS settings the target has no TLS (a plain-text client, as the demo is)', () => {
    const t = withTlsEnv({}, () => temporalTargetFromEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' }));
    assert.equal(t.address, '127.0.0.1:1');
    assert.ok(!t.profile?.tls, 'no TLS without TEMPORAL_TLS_* settings');
  });

  test('the handshake check tells a plain-text server from a TLS problem, and says nothing when nothing listens', async () => {
    // A plain-text server (it answers bytes that are not TLS, as a plain gRPC frontend does) on loopback.
    const server = net.createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    try {
      const problem = await tlsDiagnosis(`127.0.0.1:${port}`, { serverNameOverride: 'temporal' });
      assert.match(problem ?? '', /the frontend does not speak TLS \(a plain-text server\) but this client has TLS settings/);
      // A plain-text client against a plain-text server: TLS is not the problem.
      assert.equal(await tlsDiagnosis(`127.0.0.1:${port}`, undefined), undefined);
    } finally {
      server.close();
    }
    // Nothing listens: not a TLS problem either (the usual "is it running?" message stays).
    assert.equal(await tlsDiagnosis(`127.0.0.1:${port}`, { serverNameOverride: 'temporal' }), undefined);
  });
});
