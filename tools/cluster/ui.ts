/**
 * Temporal Web (github.com/temporalio/ui-server/v2, the server inside the temporalio/ui image) on
 * 127.0.0.1, decoding payloads through our codec endpoint on the gateway. Its config file says
 * what compose's temporal-ui environment (TEMPORAL_ADDRESS, TEMPORAL_CORS_ORIGINS,
 * TEMPORAL_CODEC_ENDPOINT) makes the image's template say; it holds the codec capability URL (and,
 * with sign-in, the UI's client secret at the IdP), so it is written mode 0600.
 */
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { Child, ChildExitedError } from './processes';
import type { PortBook } from './ports';
import { NAMESPACE, temporalUiTlsEnv, type TEMPORAL_UI_ENV_NAMES } from './topology';

export interface UiOptions {
  binary: string;
  stateDir: string;
  logDir: string;
  runId: string;
  /** The Temporal frontend, host:port. */
  temporalAddress: string;
  /** The codec endpoint Temporal Web calls from the operator's browser. */
  codecEndpoint: string;
  /** Port to try first (the gateways' CODEC_CORS_ORIGINS already name it); default a free one. */
  port?: number;
  /** Temporal Web's own certificate directory (its client certificate for the frontend). */
  tlsDir: string;
  ports: PortBook;
  /** Sign-in (OIDC, authorization code) at the identity provider: without it Temporal Web sends no token. */
  auth?: UiAuth;
}

/**
 * Temporal Web's OIDC login: the ui-server sends people to the IdP's login page, then sends their
 * access token (a JWT for the Temporal API with their permissions) with every call it makes for
 * them; the server's authorizer decides. The session ends when the token expires (the IdP's
 * access-token lifetime): the server then answers UNAUTHENTICATED and Temporal Web asks the person
 * to sign in again.
 */
export interface UiAuth {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface RunningUi {
  url: string;
  port: number;
  pid: number;
  child: Child;
  stop(): Promise<void>;
}

const CONFIG_ENV = 'mpf-cluster';

/** compose's environment of temporal-ui, as it would be here. */
export function uiEnvironment(o: { temporalAddress: string; origin: string; codecEndpoint: string; tlsDir: string }): Record<(typeof TEMPORAL_UI_ENV_NAMES)[number], string> {
  return {
    TEMPORAL_ADDRESS: o.temporalAddress, TEMPORAL_CORS_ORIGINS: o.origin, TEMPORAL_CODEC_ENDPOINT: o.codecEndpoint,
    ...(temporalUiTlsEnv(o.tlsDir) as Record<'TEMPORAL_TLS_CA' | 'TEMPORAL_TLS_CERT' | 'TEMPORAL_TLS_KEY' | 'TEMPORAL_TLS_SERVER_NAME' | 'TEMPORAL_TLS_ENABLE_HOST_VERIFICATION', string>),
  };
}

export function uiConfig(env: ReturnType<typeof uiEnvironment>, port: number, auth?: UiAuth): Record<string, unknown> {
  return {
    ...(auth
      ? {
        auth: {
          enabled: true,
          providers: [{
            label: 'the identity provider', type: 'oidc', providerUrl: auth.issuer, issuerUrl: auth.issuer, clientId: auth.clientId, clientSecret: auth.clientSecret,
            scopes: ['openid', 'profile', 'email'], callbackUrl: `${env.TEMPORAL_CORS_ORIGINS.split(',')[0]}/auth/sso/callback`,
          }],
        },
      }
      : {}),
    temporalGrpcAddress: env.TEMPORAL_ADDRESS,
    host: '127.0.0.1',
    port,
    enableUi: true,
    defaultNamespace: NAMESPACE,
    notifyOnNewVersion: false,
    refreshInterval: '0s',
    cors: { cookieInsecure: true, unsafeAllowAllOrigins: false, allowOrigins: env.TEMPORAL_CORS_ORIGINS.split(',') },
    // Signed in, Temporal Web sends the person's token to the codec endpoint, which authorises it (codec.ts).
    codec: { endpoint: env.TEMPORAL_CODEC_ENDPOINT, passAccessToken: auth !== undefined, includeCredentials: false },
    // Its client certificate for the frontend's mTLS (the image's TEMPORAL_TLS_* variables).
    tls: {
      caFile: env.TEMPORAL_TLS_CA,
      certFile: env.TEMPORAL_TLS_CERT,
      keyFile: env.TEMPORAL_TLS_KEY,
      serverName: env.TEMPORAL_TLS_SERVER_NAME,
      enableHostVerification: env.TEMPORAL_TLS_ENABLE_HOST_VERIFICATION === 'true',
    },
  };
}

async function settingsServed(url: string): Promise<boolean> {
  const res = await request(`${url}/api/v1/settings`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  await res.body.text();
  return res.statusCode === 200;
}

export async function startUi(o: UiOptions): Promise<RunningUi> {
  const root = path.join(o.stateDir, 'ui');
  const configDir = path.join(root, 'config');
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const configFile = path.join(configDir, `${CONFIG_ENV}.yaml`);
  for (let attempt = 1; ; attempt++) {
    const port = attempt === 1 && o.port ? o.port : await o.ports.one('temporal-ui', { fresh: attempt > 1 });
    const url = `http://127.0.0.1:${port}`;
    const env = uiEnvironment({ temporalAddress: o.temporalAddress, origin: url, codecEndpoint: o.codecEndpoint, tlsDir: o.tlsDir });
    fs.rmSync(configFile, { force: true });
    fs.writeFileSync(configFile, `# Written by mpf cluster up; see tools/cluster/ui.ts.\n${stringify(uiConfig(env, port, o.auth))}`, { mode: 0o600 });
    const child = new Child('temporal-ui', o.binary, ['--root', root, '--config', 'config', '--env', CONFIG_ENV, 'start'], {
      cwd: root,
      env: { PATH: process.env.PATH },
      logFile: path.join(o.logDir, 'temporal-ui.log'),
      runId: o.runId,
    });
    try {
      await child.waitUntil(() => settingsServed(url), 30_000, 'serving');
    } catch (e) {
      await child.stop();
      if (e instanceof ChildExitedError && /address already in use/i.test(child.log()) && attempt < 3) continue;
      throw e;
    }
    return { url, port, pid: child.pid, child, stop: () => child.stop() };
  }
}
