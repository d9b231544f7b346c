/**
 * docker-compose.yml's `codec` service: Temporal Web's codec endpoint behind sign-in, as
 * `mpf cluster up` runs it with MPF_CLUSTER_AUTH=1 (tools/cluster/codec-process.ts): the codec
 * server of src/codec with `personTokens`, so each call Temporal Web makes for a signed-in person
 * (codec.passAccessToken) is authorised by that person's access token — verified against the IdP's
 * JWKS, for a person who may read the namespace — and served over https (Temporal Web sends a token
 * only to an https endpoint) with a certificate of the stack's CA. What differs from the native
 * process is only where it listens (every address of the container). Run as
 *   node --require tsx/cjs docker/codec.ts
 * in the app image, with PAYLOAD_ENCRYPTION_KEYS_FILE, CODEC_AUTH_TOKEN_FILE (the static token
 * `temporal workflow show --codec-auth` sends), CODEC_CORS_ORIGINS, CODEC_PORT, CODEC_TLS_DIR and
 * the IdP's CODEC_PERSON_ISSUER, CODEC_PERSON_AUDIENCE, CODEC_PERSON_JWKS_URL and
 * CODEC_PERSON_PERMISSIONS_CLAIM.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startCodecServer, type PersonTokenSettings } from '../src/codec/codec-server';

const required = (env: NodeJS.ProcessEnv, name: string): string => {
  const v = env[name];
  if (!v) throw new Error(`${name}: not set`);
  return v;
};

/** The person-token settings of the environment (as `mpf cluster up` gives its codec process: issuer, audience, JWKS, claim). */
export function personTokensFromEnv(env: NodeJS.ProcessEnv): PersonTokenSettings {
  return {
    issuer: required(env, 'CODEC_PERSON_ISSUER'),
    audience: required(env, 'CODEC_PERSON_AUDIENCE'),
    jwksUrl: required(env, 'CODEC_PERSON_JWKS_URL'),
    permissionsClaim: required(env, 'CODEC_PERSON_PERMISSIONS_CLAIM'),
  };
}

async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const read = (name: string) => fs.readFileSync(required(env, name), 'utf8').trim();
  const tlsDir = required(env, 'CODEC_TLS_DIR');
  const server = await startCodecServer({
    port: Number(required(env, 'CODEC_PORT')), host: '0.0.0.0', logger: true,
    keys: read('PAYLOAD_ENCRYPTION_KEYS_FILE'), authToken: read('CODEC_AUTH_TOKEN_FILE'),
    corsOrigins: required(env, 'CODEC_CORS_ORIGINS').split(',').map((s) => s.trim()).filter(Boolean),
    personTokens: personTokensFromEnv(env),
    https: { key: fs.readFileSync(path.join(tlsDir, 'key.pem')), cert: fs.readFileSync(path.join(tlsDir, 'cert.pem')) },
  });
  process.stdout.write(`codec: listening on ${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main(process.env).catch((e: unknown) => {
    process.stderr.write(`codec: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
