/**
 * docker-compose.yml's `idp` service: the identity provider of `mpf cluster up` — the same
 * node-oidc-provider code (tools/cluster/idp-server.ts) with the same people and clients
 * (tools/cluster/idp.ts: idpServerConfig) — in a container. Run as
 *   node --require tsx/cjs docker/idp.ts
 * in the app image, with:
 *   IDP_ISSUER            its issuer URL, https (compose: https://idp.localhost:9443)
 *   IDP_SECRETS_DIR       its secrets, made by compose's `secrets` job (0600): the signing key (a
 *                         P-256 key in PEM, published as a JWK whose kid is its thumbprint), the
 *                         cookie key, one password per person, one secret per client
 *   IDP_TLS_DIR           its certificate (key.pem, cert.pem) from the stack's CA (temporal-certs)
 *   IDP_UI_CALLBACK_URLS  Temporal Web's callback URLs, comma-separated
 *   MPF_CLUSTER_TOKEN_TTL_SECONDS  shorter token lifetimes (a test of renewal), as `mpf cluster up`
 *                         takes them (a whole number of seconds, at least 10; anything else refused)
 * What differs from `mpf cluster up`'s process is only where it listens (every address of the
 * container, the issuer's port) and that it serves https itself (idp-server.ts's `tls` option):
 * workers and gateways take tokens only from an https issuer off loopback, and people's browsers
 * are sent to it.
 */
import { createHash, createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { IDP_MACHINE_CLIENTS, IDP_PEOPLE, idpSecretFiles, idpServerConfig, idpTtlFromEnvironment, UI_CLIENT_ID, type IdpSecrets } from '../tools/cluster/idp';
import { main as idpServerMain, type IdpServerFileConfig } from '../tools/cluster/idp-server';

const required = (name: string, env: NodeJS.ProcessEnv = process.env): string => {
  const v = env[name];
  if (!v) throw new Error(`${name}: not set`);
  return v;
};

/** A P-256 private key in PEM as the JWK the IdP signs with; kid = its RFC 7638 thumbprint (stable across restarts). */
export function signingJwk(pem: string): Record<string, unknown> {
  const jwk = createPrivateKey(pem).export({ format: 'jwk' }) as Record<string, string>;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') throw new Error('idp_signing_key: not a P-256 key');
  const kid = createHash('sha256').update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })).digest('base64url');
  return { ...jwk, kid, alg: 'ES256', use: 'sig' };
}

/** The IdP's secrets from compose's files (the same names as idp.ts's files natively). */
export function readIdpSecrets(dir: string): IdpSecrets {
  const read = (f: string) => {
    const v = fs.readFileSync(path.join(dir, f), 'utf8').trim();
    if (!v) throw new Error(`${f}: empty`);
    return v;
  };
  return {
    signingKey: signingJwk(read(idpSecretFiles.signingKey)),
    cookieKey: read(idpSecretFiles.cookieKey),
    passwords: Object.fromEntries(IDP_PEOPLE.map((p) => [p.id, read(idpSecretFiles.password(p.id))])) as IdpSecrets['passwords'],
    clientSecrets: Object.fromEntries([...IDP_MACHINE_CLIENTS.map((c) => c.id), UI_CLIENT_ID].map((c) => [c, read(idpSecretFiles.clientSecret(c as typeof UI_CLIENT_ID))])) as IdpSecrets['clientSecrets'],
  };
}

/**
 * The configuration idp-server.ts reads: idp.ts's, listening on every address of the container,
 * over https with the certificate of IDP_TLS_DIR.
 */
export function composeIdpConfig(env: NodeJS.ProcessEnv): IdpServerFileConfig {
  const issuer = required('IDP_ISSUER', env);
  const url = new URL(issuer);
  if (url.protocol !== 'https:') throw new Error(`IDP_ISSUER: ${issuer} must be https`);
  const port = Number(url.port || 443);
  const secrets = readIdpSecrets(required('IDP_SECRETS_DIR', env));
  const uiCallbackUrls = required('IDP_UI_CALLBACK_URLS', env).split(',').map((s) => s.trim()).filter(Boolean);
  const tlsDir = required('IDP_TLS_DIR', env);
  return {
    ...idpServerConfig({ issuer, port, secrets, ttl: idpTtlFromEnvironment(env), uiCallbackUrls }),
    host: '0.0.0.0',
    tls: { certFile: path.join(tlsDir, 'cert.pem'), keyFile: path.join(tlsDir, 'key.pem') },
  };
}

async function run(): Promise<void> {
  const cfg = composeIdpConfig(process.env);
  // The config holds the signing key and the client secrets: a 0600 file in a directory of its own.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-idp-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(cfg), { mode: 0o600 });
  await idpServerMain(['node', 'idp-server', file]);
}

if (require.main === module) {
  run().catch((e: unknown) => {
    process.stderr.write(`idp: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
}
