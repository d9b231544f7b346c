/**
 * The cluster's codec endpoint for Temporal Web behind sign-in (a process of `mpf cluster up` with
 * MPF_CLUSTER_AUTH=1): the codec server of src/codec with `personTokens`, so Temporal Web's calls
 * (codec.passAccessToken) are authorised by the signed-in person's access token, verified against
 * the IdP's JWKS, for a person who may read the namespace. It reads the payload keys and the static
 * codec token (for `temporal workflow show --codec-auth`) from the files its config names; the
 * config holds no secret. It serves https with a certificate of the cluster's CA (Temporal Web
 * sends a person's token only to an https codec endpoint). Run as `node --require tsx/cjs tools/cluster/codec-process.ts <config>`;
 * prints "codec: listening on <url>".
 */
import fs from 'node:fs';
import path from 'node:path';
import { startCodecServer, type PersonTokenSettings } from '../../src/codec/codec-server';
import { TLS_FILES } from './topology';

export interface CodecProcessConfig {
  port: number;
  keysFile: string;
  authTokenFile: string;
  corsOrigins: string[];
  personTokens: PersonTokenSettings;
  /** Its certificate's directory (a server certificate of the cluster's CA for 127.0.0.1). */
  tlsDir: string;
}

async function main(configFile: string): Promise<void> {
  const cfg = JSON.parse(fs.readFileSync(configFile, 'utf8')) as CodecProcessConfig;
  const read = (f: string) => fs.readFileSync(f, 'utf8').trim();
  const server = await startCodecServer({
    port: cfg.port, host: '127.0.0.1', keys: read(cfg.keysFile), authToken: read(cfg.authTokenFile), corsOrigins: cfg.corsOrigins, personTokens: cfg.personTokens, logger: true,
    https: { key: fs.readFileSync(path.join(cfg.tlsDir, TLS_FILES.key)), cert: fs.readFileSync(path.join(cfg.tlsDir, TLS_FILES.cert)) },
  });
  process.stdout.write(`codec: listening on ${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main(process.argv[2] ?? '').catch((e: unknown) => {
    process.stderr.write(`codec: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
