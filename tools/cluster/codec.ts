/**
 * With authorisation on, Temporal Web decodes through a codec endpoint that authorises the
 * signed-in person's token (codec-process.ts) instead of the gateways' capability URL: a process
 * of its own on 127.0.0.1, over https (Temporal Web sends a token only to an https endpoint) with a
 * certificate of the cluster's CA — the operator's browser must trust that CA — started before
 * Temporal Web (whose config names it). The gateways' own /codec also take people's tokens
 * (GATEWAY_OIDC_*), but they serve plain http here, to which Temporal Web sends no token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { PROJECT_ROOT } from '../../src/temporal/provision';
import type { CodecProcessConfig } from './codec-process';
import { Child } from './processes';
import { issueCertificate } from './tls';
import { TLS_FILES } from './topology';
import type { PortBook } from './ports';

export interface PersonCodecOptions {
  stateDir: string;
  logDir: string;
  runId: string;
  ports: PortBook;
  /** The payload keys' and the static codec token's files (the secrets directory). */
  keysFile: string;
  authTokenFile: string;
  /** Temporal Web's origin (CORS). */
  uiOrigin: string;
  personTokens: CodecProcessConfig['personTokens'];
  /** The cluster's certificate directory: a server certificate for 127.0.0.1 is issued there (`codec/`), signed by its CA. */
  tlsDir: string;
  ctx: { logDir: string; runId: string };
}

export interface RunningPersonCodec {
  /** The endpoint Temporal Web is given: `<url>/codec`. */
  endpoint: string;
  url: string;
  pid: number;
  child: Child;
  stop(): Promise<void>;
}

/** Serving (over TLS, its certificate verified against the cluster's CA): a POST without a token is refused 401 before its body is read. */
async function refusesWithoutToken(url: string, ca: Buffer): Promise<boolean> {
  const dispatcher = new Agent({ connect: { ca } });
  try {
    const res = await request(`${url}/codec/decode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', headersTimeout: 2_000, bodyTimeout: 2_000, dispatcher });
    await res.body.text();
    return res.statusCode === 401;
  } finally {
    await dispatcher.close();
  }
}

export async function startPersonCodec(o: PersonCodecOptions): Promise<RunningPersonCodec> {
  const dir = path.join(o.stateDir, 'codec');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const configFile = path.join(dir, 'config.json');
  // A server certificate for 127.0.0.1 and localhost from the cluster's CA (the frontend's kind of certificate).
  const certDir = await issueCertificate(o.tlsDir, { name: 'codec', kind: 'frontend' }, o.ctx);
  const ca = fs.readFileSync(path.join(certDir, TLS_FILES.ca));
  for (let attempt = 1; ; attempt++) {
    const port = await o.ports.one('codec', { fresh: attempt > 1 });
    const cfg: CodecProcessConfig = { port, keysFile: o.keysFile, authTokenFile: o.authTokenFile, corsOrigins: [o.uiOrigin], personTokens: o.personTokens, tlsDir: certDir };
    fs.rmSync(configFile, { force: true });
    fs.writeFileSync(configFile, JSON.stringify(cfg), { mode: 0o600 });
    const child = new Child('codec', process.execPath, ['--require', 'tsx/cjs', path.join(PROJECT_ROOT, 'tools', 'cluster', 'codec-process.ts'), configFile], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' },
      logFile: path.join(o.logDir, 'codec.log'),
      runId: o.runId,
    });
    const url = `https://127.0.0.1:${port}`;
    try {
      await child.waitUntil(() => refusesWithoutToken(url, ca), 30_000, 'serving');
    } catch (e) {
      await child.stop();
      if (/EADDRINUSE/.test(child.log()) && attempt < 3) continue;
      throw e;
    }
    return { endpoint: `${url}/codec`, url, pid: child.pid, child, stop: () => child.stop() };
  }
}
