/**
 * Connections to Temporal for the worker and the clients: TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE
 * when set, else the envconfig profile (TEMPORAL_PROFILE, temporal.toml: TLS, API keys), else
 * localhost:7233. TLS (mTLS) comes from the envconfig settings the SDK and the `temporal` CLI read:
 * TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH,
 * TEMPORAL_TLS_SERVER_NAME (or the profile's [tls] table). A setting naming a file that cannot be
 * read stops here, naming the setting; a connection the frontend refuses for TLS reasons is
 * explained by a TLS handshake of our own (tlsDiagnosis), naming the setting to fix. Every client
 * gets the encrypting data converter.
 */
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { clientDataConverter } from '../codec/data-converter';
import { ConfigError } from '../config/env';
import { mpfClientInterceptors } from '../observability/temporal-client';
import { renewingToken, tokenSettingsFromEnv, type RenewingToken, type TokenSettings } from './tokens';

/** The envconfig TLS settings that name files. */
export const TLS_PATH_SETTINGS = ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'] as const;
const CLIENT_CERT_SETTINGS = 'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH';

/** Refuses TLS settings that cannot work, naming the setting: an unreadable file, a certificate without its key. */
function checkTlsSettings(env: NodeJS.ProcessEnv): void {
  for (const name of TLS_PATH_SETTINGS) {
    const file = env[name];
    if (file === undefined || file === '') continue;
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new ConfigError(`${name}: cannot read ${file} (${code}); it must name a PEM file this process can read`);
    }
  }
  const cert = Boolean(env.TEMPORAL_TLS_CLIENT_CERT_PATH || env.TEMPORAL_TLS_CLIENT_CERT_DATA);
  const key = Boolean(env.TEMPORAL_TLS_CLIENT_KEY_PATH || env.TEMPORAL_TLS_CLIENT_KEY_DATA);
  if (cert !== key) throw new ConfigError(`${cert ? 'TEMPORAL_TLS_CLIENT_KEY_PATH' : 'TEMPORAL_TLS_CLIENT_CERT_PATH'}: not set; a client certificate needs both ${CLIENT_CERT_SETTINGS}`);
}

export interface TemporalTarget {
  address: string;
  /** Where the address came from, for error messages. */
  addressFrom?: 'TEMPORAL_ADDRESS' | 'envconfig profile' | 'default';
  namespace: string;
  /** Extra options from the envconfig profile (TLS, API key, metadata). */
  profile?: ReturnType<typeof loadClientConnectConfig>['connectionOptions'];
  /** A machine client of the identity provider: its tokens are fetched and renewed (tokens.ts). */
  tokens?: TokenSettings;
}

export function temporalTargetFromEnv(env: Parameters<typeof tokenSettingsFromEnv>[0] & { TEMPORAL_ADDRESS?: string; TEMPORAL_NAMESPACE?: string }): TemporalTarget {
  const tokens = tokenSettingsFromEnv(env);
  let profile: TemporalTarget['profile'];
  let profileNamespace: string | undefined;
  // envconfig reads the process's environment; so does this check.
  checkTlsSettings(process.env);
  try {
    const cfg = loadClientConnectConfig();
    profile = cfg.connectionOptions;
    profileNamespace = cfg.namespace;
  } catch (e) {
    // A TLS setting that names no readable file must never fall back to a plain-text connection.
    if (Object.keys(process.env).some((k) => k.startsWith('TEMPORAL_TLS'))) {
      throw new ConfigError(`the Temporal TLS settings (TEMPORAL_TLS_*) cannot be loaded: ${(e as Error).message}`);
    }
    profile = undefined; // no profile file: plain defaults
  }
  return {
    address: env.TEMPORAL_ADDRESS ?? profile?.address ?? 'localhost:7233',
    addressFrom: env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : profile?.address ? 'envconfig profile' : 'default',
    namespace: env.TEMPORAL_NAMESPACE ?? profileNamespace ?? 'default',
    profile,
    ...(tokens ? { tokens } : {}),
  };
}

/** Temporal could not be reached: names the address, where it came from, and what to check. */
export class TemporalConnectError extends Error {
  override name = 'TemporalConnectError';
  /** What our own TLS handshake found (tlsDiagnosis), when the cause was TLS. */
  readonly tlsProblem?: string;
  constructor(target: TemporalTarget, cause: unknown, tlsProblem?: string) {
    if (tlsProblem) {
      super(`cannot connect to Temporal at ${target.address}, namespace ${target.namespace}: ${tlsProblem}`, { cause });
      this.tlsProblem = tlsProblem;
      return;
    }
    const from =
      target.addressFrom === 'TEMPORAL_ADDRESS'
        ? 'from TEMPORAL_ADDRESS'
        : target.addressFrom === 'envconfig profile'
          ? 'from the Temporal envconfig profile (TEMPORAL_PROFILE / temporal.toml)'
          : 'the default; set TEMPORAL_ADDRESS';
    super(
      `cannot connect to Temporal at ${target.address} (${from}), namespace ${target.namespace}: ${briefCause(cause)}. ` +
        'Check that the Temporal frontend is running and reachable from here (host:port of its gRPC port, usually 7233) and, for TLS or API keys, the envconfig profile.',
      { cause },
    );
  }
}

/** The first line of a connection error, without the Rust core's `tonic::transport::Error(...)` dump. */
function briefCause(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  const first = msg.split('\n')[0]!.trim();
  if (/tonic::transport|transport error/i.test(first)) {
    const inner = /(Connection refused|No route to host|dns error[^")]*|timed out|Connection reset)/i.exec(msg);
    return inner ? `transport error (${inner[1]})` : 'transport error';
  }
  return first.length > 300 ? `${first.slice(0, 300)}…` : first;
}

type TlsOption = NonNullable<TemporalTarget['profile']>['tls'];

function hostPort(address: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  return m ? { host: m[1] as string, port: Number(m[2]) } : { host: address, port: 7233 };
}

const toBuffer = (b: Buffer | Uint8Array | undefined) => (b ? Buffer.from(b) : undefined);

/**
 * Why a TLS connection to the frontend fails, in words that name the TLS setting to fix; undefined
 * when TLS is not the problem (nothing listens, a plain-text frontend, a working handshake). It
 * makes a TLS handshake of its own with the client's settings and sends an HTTP/2 preface, so a
 * frontend that refuses the client's certificate (or its absence) says so with its alert.
 */
export async function tlsDiagnosis(address: string, clientTls: TlsOption, timeoutMs = 3_000): Promise<string | undefined> {
  const { host, port } = hostPort(address);
  const configured = clientTls !== undefined && clientTls !== false;
  const o = clientTls && clientTls !== true ? clientTls : {};
  const servername = o.serverNameOverride ?? (net.isIP(host) ? undefined : host);
  const result = await new Promise<{ code?: string; message?: string; secure: boolean; alive: boolean }>((resolve) => {
    let secure = false;
    const socket = tls.connect({
      host,
      port,
      ...(servername ? { servername } : {}),
      ALPNProtocols: ['h2'],
      // Without TLS settings, only whether the frontend speaks TLS matters: its certificate is not checked.
      rejectUnauthorized: configured,
      ...(configured && o.serverRootCACertificate ? { ca: toBuffer(o.serverRootCACertificate) } : {}),
      ...(configured && o.clientCertPair ? { cert: toBuffer(o.clientCertPair.crt), key: toBuffer(o.clientCertPair.key) } : {}),
      ...(!servername ? { checkServerIdentity: (_h: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(host, cert) } : {}),
    });
    const done = (r: { code?: string; message?: string; alive: boolean }) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...r, secure });
    };
    const timer = setTimeout(() => done({ alive: true }), timeoutMs);
    socket.once('secureConnect', () => {
      secure = true;
      // TLS 1.3: the server checks the client's certificate after the client's handshake ends; its
      // verdict (an alert, or HTTP/2 settings) comes with the first read.
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    });
    socket.once('data', () => done({ alive: true }));
    // Every error until the socket closes (the alert can come with, or after, a broken pipe).
    const errors: NodeJS.ErrnoException[] = [];
    socket.on('error', (e: NodeJS.ErrnoException) => errors.push(e));
    socket.once('close', () => done({ code: errors.map((e) => e.code).join(' '), message: errors.map((e) => e.message).join(' '), alive: false }));
  });
  const msg = `${result.code ?? ''} ${result.message ?? ''}`;
  const setTls = `set ${CLIENT_CERT_SETTINGS} to this client's certificate and key, TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that signed the frontend's, and TEMPORAL_TLS_SERVER_NAME to the name in it`;
  if (/ECONNREFUSED|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN/.test(msg)) return undefined;
  if (!configured) {
    // A plain-text client: does the frontend speak TLS?
    if (result.secure || /alert|certificate/i.test(msg)) return `the frontend requires TLS with a client certificate and this client has no TLS settings: ${setTls}`;
    return undefined;
  }
  if (/certificate required|alert number 116|handshake failure|alert number 40/i.test(msg)) {
    return `the frontend requires a client certificate and this client sent none: ${setTls}`;
  }
  if (/unknown ca|alert number 48|bad certificate|alert number 42|certificate unknown|alert number 46|unsupported certificate|alert number 43|decrypt error|access denied/i.test(msg)) {
    return `the frontend refused this client's certificate (not signed by a CA it trusts, or not for client authentication): check ${CLIENT_CERT_SETTINGS} (a certificate from the cluster's CA)`;
  }
  if (/certificate has expired|CERT_HAS_EXPIRED/i.test(msg)) return "the frontend's certificate has expired: renew it on the server";
  if (/ERR_TLS_CERT_ALTNAME_INVALID|Hostname\/IP does not match/i.test(msg)) {
    return `the frontend's certificate is not for the name this client checks (${servername ?? host}): set TEMPORAL_TLS_SERVER_NAME to the name in the frontend's certificate`;
  }
  if (/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT|unable to verify|self.signed/i.test(msg)) {
    return "this client does not trust the frontend's certificate: set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA certificate that signed it";
  }
  if (/wrong version number|packet length too long|ECONNRESET|socket disconnected before secure/i.test(msg) && !result.secure) {
    return 'the frontend does not speak TLS (a plain-text server) but this client has TLS settings: unset the TEMPORAL_TLS_* settings, or enable TLS on the server';
  }
  return undefined;
}

/** The TemporalConnectError of a failed connection, with the TLS problem named when there is one. */
export async function connectError(target: TemporalTarget, cause: unknown): Promise<TemporalConnectError> {
  let problem: string | undefined;
  try {
    problem = await tlsDiagnosis(target.address, target.profile?.tls);
  } catch {
    problem = undefined;
  }
  return new TemporalConnectError(target, cause, problem);
}

/**
 * The token of a machine client (target.tokens), fetched before connecting and renewed until the
 * process ends; undefined without one. An API key of the profile and a token are exclusive.
 */
export async function targetToken(target: TemporalTarget): Promise<RenewingToken | undefined> {
  if (!target.tokens) return undefined;
  if (target.profile?.apiKey) throw new ConfigError('TEMPORAL_API_KEY (or the profile\'s api_key) and TEMPORAL_OIDC_* are both set: a process authenticates to Temporal one way; unset one');
  return renewingToken(target.tokens, (line) => process.stderr.write(`${line}\n`));
}

export async function connectClient(target: TemporalTarget, keys: string): Promise<Client> {
  let connection: Connection;
  const token = await targetToken(target);
  try {
    connection = await Connection.connect({
      ...(target.profile as object),
      address: target.address,
      // Read at every call: a renewed token is used from the next call on.
      ...(token ? { apiKey: () => token.current() } : {}),
    } as Parameters<typeof Connection.connect>[0]);
  } catch (e) {
    token?.stop();
    throw await connectError(target, e);
  }
  return new Client({ connection, namespace: target.namespace, dataConverter: clientDataConverter(keys), interceptors: mpfClientInterceptors() });
}
