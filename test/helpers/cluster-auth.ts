/**
 * Acting on a cluster of `mpf cluster up` as its people do, now that every call to its Temporal API
 * is authorised by the identity provider's tokens (the default; MPF_CLUSTER_AUTH=0 turns it off):
 * the operator signs in as a person (tools/cluster/login.ts, with the password from the secrets
 * directory) and sends the access token beside the operator's certificate — as `apiKey` of an SDK
 * connection, as TEMPORAL_API_KEY of the `temporal` CLI and `mpf`, or as `Authorization: Bearer` to
 * Temporal Web's API. With a cluster started with MPF_CLUSTER_AUTH=0 (cluster.json's `auth` unset)
 * the same helpers give the certificate alone.
 *
 * Tokens are only ever handed to the code that sends them: never printed, logged or put in an
 * assertion's message.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { idpSecretFiles, type PersonId } from '../../tools/cluster/idp';
import { personLogin, tokenFile } from '../../tools/cluster/login';
import type { ClusterInfo } from '../../tools/cluster/state';
import { clientTls } from '../../tools/cluster/tls';
import { temporalClientTlsEnv } from '../../tools/cluster/topology';

const ROOT = path.resolve(__dirname, '..', '..');


/** A JWT in some text (three base64url parts, the first a JSON header): tests assert none is printed. */
export const JWT_PATTERN = /eyJ[\w-]{10,}\.[\w-]{10,}/;


/** The person's password, from its 0600 file among the cluster's secrets (`idp_password_<person>`). */
export const idpPasswordFile = (info: ClusterInfo, who: PersonId): string => path.join(info.secretsDir, idpSecretFiles.password(who));

/** `who` signs in at the cluster's identity provider (login.ts's flow, in this process); their access token. */
export async function personToken(info: ClusterInfo, who: PersonId = 'operator'): Promise<string> {
  assert.ok(info.idp, 'cluster.json names the identity provider');
  const t = await personLogin({ issuer: info.idp.issuer, user: who, password: fs.readFileSync(idpPasswordFile(info, who), 'utf8').trim() });
  return t.accessToken;
}

/**
 * How the operator connects to the cluster's Temporal API with the SDK: the operator's certificate
 * (transport, component identity) and, when the cluster authorises calls, the operator's own
 * access token (signed in as a person) as `apiKey`.
 */
export async function operatorConnectionOptions(info: ClusterInfo): Promise<{ address: string; tls: ReturnType<typeof clientTls>; apiKey?: string }> {
  const tls = clientTls(path.join(info.tlsDir, 'operator'));
  return { address: info.temporal!.address, tls, ...(info.auth ? { apiKey: await personToken(info, 'operator') } : {}) };
}

/** An SDK connection as the operator (operatorConnectionOptions); the caller closes it. */
export async function connectAsOperator(info: ClusterInfo, o: { connectTimeout?: number } = {}): Promise<Connection> {
  return Connection.connect({ ...(await operatorConnectionOptions(info)), ...o });
}

/** Runs `call` on an operator's connection, closed after. */
export async function asOperator<T>(info: ClusterInfo, call: (c: Connection) => Promise<T>): Promise<T> {
  const c = await connectAsOperator(info);
  try {
    return await call(c);
  } finally {
    await c.close();
  }
}

/**
 * The `temporal` CLI's settings for the operator, as cluster.env gives them once the operator has
 * signed in: the certificate's paths and, when the cluster authorises calls, the token in
 * TEMPORAL_API_KEY.
 */
export async function operatorCliEnv(info: ClusterInfo): Promise<Record<string, string>> {
  return { ...temporalClientTlsEnv(path.join(info.tlsDir, 'operator')), ...(info.auth ? { TEMPORAL_API_KEY: await personToken(info, 'operator') } : {}) };
}

/**
 * The operator's shell signs in as the runbook writes it: `tools/cluster/login.ts --user operator
 * --state-dir <dir> --password-file <secrets>/idp_password_operator`, which writes
 * `<state dir>/tokens/operator` (0600) for cluster.env to read into TEMPORAL_API_KEY. Fails the
 * test if it does not sign in, or prints a token.
 */
export function signInOperatorShell(info: ClusterInfo): void {
  const login = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'tools', 'cluster', 'login.ts'), '--user', 'operator', '--state-dir', info.stateDir, '--password-file', idpPasswordFile(info, 'operator')],
    { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
  );
  const printed = `${login.stdout}${login.stderr}`;
  assert.doesNotMatch(printed, JWT_PATTERN, 'login.ts prints no token');
  assert.equal(login.status, 0, `login.ts: ${printed}`);
  assert.match(login.stdout, /signed in as operator until/);
  assert.equal(fs.statSync(tokenFile(info.stateDir, 'operator')).mode & 0o777, 0o600, 'the token file is mode 0600');
}

/**
 * The environment a shell has after `set -a; . cluster.env; set +a` (bash sources it, so
 * TEMPORAL_API_KEY holds the operator's token file's content, `$PATH` is expanded), starting from
 * `base` (by default this process's PATH and `HOME` the state dir).
 */
export function clusterShellEnv(info: ClusterInfo, base: Record<string, string | undefined> = { PATH: process.env.PATH, HOME: info.stateDir }): Record<string, string> {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', 'set -a; . "$1"; set +a; env -0', 'sh', info.envFile], { env: base, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, `sourcing ${info.envFile}: ${r.stderr}`);
  const env = Object.fromEntries(r.stdout.split('\0').filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  for (const k of ['_', 'SHLVL', 'PWD', 'OLDPWD']) delete env[k];
  return env;
}
