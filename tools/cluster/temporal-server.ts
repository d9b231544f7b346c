/**
 * The Temporal server (go.temporal.io/server, all four services in one process, as the
 * temporalio/server image runs it) on PostgreSQL: persistence in `temporal`, SQL visibility in
 * `temporal_visibility`, HISTORY_SHARDS shards. Its config file says what compose's environment
 * (TEMPORAL_SERVER_ENV) makes the image's template say, with loopback ports instead of 7233…;
 * it holds the database password, so it is written mode 0600.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { stringify } from 'yaml';
import { Child, ChildExitedError } from './processes';
import type { PortBook } from './ports';
import { clientTls } from './tls';
import { DATABASE, HISTORY_SHARDS, TEMPORAL_SERVER_ENV, temporalServerTlsEnv } from './topology';

export interface TemporalServerOptions {
  binary: string;
  stateDir: string;
  logDir: string;
  postgres: { host: string; port: number; password: string };
  runId: string;
  /** The certificate directory (tls.ts): the server's `frontend` and `internode`, the `operator`'s for the readiness check. */
  tlsDir: string;
  /** Its 9 ports (gRPC, HTTP, each service's gRPC and membership), kept across --keep-data restarts. */
  ports: PortBook;
  /** Authorisation of every call by JWT (the identity provider's); without it the frontend runs no authorizer. */
  auth?: TemporalAuth;
}

/**
 * Authorisation of every call: Temporal's JWT claim mapper reads the `permissions` claim of a
 * token signed by a key of the IdP's JWKS (for `audience`); the project's authorizer
 * (tools/cluster/temporal-server/authz.go, built into the server) decides what each role may do:
 * read reads, write (gateways) starts, signals and updates but never terminates, cancels or
 * resets, worker polls and completes tasks, admin on the namespace (the operator) does everything
 * to flows, admin on temporal-system (the administrator) changes namespaces. `token` is the admin
 * tools' token (the readiness check).
 */
export interface TemporalAuth {
  jwksUrl: string;
  audience: string;
  permissionsClaimName: string;
  token: () => string;
}

export interface RunningTemporalServer {
  /** The frontend's gRPC address, host:port. */
  address: string;
  /** The frontend's HTTP API. */
  httpAddress: string;
  pid: number;
  configFile: string;
  child: Child;
  stop(): Promise<void>;
}

interface Ports {
  grpc: number;
  http: number;
  frontendMembership: number;
  historyGrpc: number;
  historyMembership: number;
  matchingGrpc: number;
  matchingMembership: number;
  workerGrpc: number;
  workerMembership: number;
  /** The internal frontend (with auth only): the server's own worker service calls it over internode mTLS, not the authorising frontend. */
  internalFrontend?: { grpc: number; membership: number };
}

const CONFIG_ENV = 'mpf-cluster';

/**
 * global.tls as the temporalio/server image's template renders it from temporalServerTlsEnv (the
 * same variables compose sets): mTLS on the frontend (a client certificate from the CA required)
 * and between the server's own services; the internal worker calls the frontend with the internode
 * certificate. Certificate files are read again every refreshInterval.
 */
export function temporalServerTls(tlsDir: string): Record<string, unknown> {
  const e = temporalServerTlsEnv(tlsDir);
  return {
    refreshInterval: e.TEMPORAL_TLS_REFRESH_INTERVAL,
    internode: {
      server: {
        requireClientAuth: e.TEMPORAL_TLS_REQUIRE_CLIENT_AUTH === 'true',
        certFile: e.TEMPORAL_TLS_SERVER_CERT,
        keyFile: e.TEMPORAL_TLS_SERVER_KEY,
        clientCaFiles: [e.TEMPORAL_TLS_SERVER_CA_CERT],
      },
      client: { serverName: e.TEMPORAL_TLS_INTERNODE_SERVER_NAME, disableHostVerification: false, rootCaFiles: [e.TEMPORAL_TLS_SERVER_CA_CERT] },
    },
    frontend: {
      server: {
        requireClientAuth: e.TEMPORAL_TLS_REQUIRE_CLIENT_AUTH === 'true',
        certFile: e.TEMPORAL_TLS_FRONTEND_CERT,
        keyFile: e.TEMPORAL_TLS_FRONTEND_KEY,
        clientCaFiles: [e.TEMPORAL_TLS_CLIENT1_CA_CERT, e.TEMPORAL_TLS_CLIENT2_CA_CERT],
      },
      client: { serverName: e.TEMPORAL_TLS_FRONTEND_SERVER_NAME, disableHostVerification: false, rootCaFiles: [e.TEMPORAL_TLS_SERVER_CA_CERT] },
    },
  };
}

/**
 * global.authorization: the project's authorizer and claim mapper (`mpf`: Temporal's JWT claim
 * mapper, whose refusals it explains), keys from the IdP's JWKS (read again every minute).
 */
export function temporalServerAuthorization(a: Omit<TemporalAuth, 'token'>): Record<string, unknown> {
  return {
    jwtKeyProvider: { keySourceURIs: [a.jwksUrl], refreshInterval: '1m' },
    permissionsClaimName: a.permissionsClaimName,
    authorizer: 'mpf',
    claimMapper: 'mpf',
    audience: a.audience,
  };
}

/** Dynamic config with authorisation: a refusal says to the caller what it holds and what the call needs (authz.go's message, never a token). */
export const AUTH_DYNAMIC_CONFIG = { 'frontend.exposeAuthorizerErrors': [{ value: true }] } as const;

export function temporalServerConfig(o: Omit<TemporalServerOptions, 'ports'>, ports: Ports): Record<string, unknown> {
  const host = '127.0.0.1';
  const sql = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: TEMPORAL_SERVER_ENV.DB,
      databaseName,
      connectAddr: `${o.postgres.host}:${o.postgres.port}`,
      connectProtocol: 'tcp',
      user: TEMPORAL_SERVER_ENV.POSTGRES_USER,
      password: o.postgres.password,
      // The image's defaults (SQL_MAX_CONNS / SQL_VIS_MAX_CONNS).
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: host, ...(httpPort ? { httpPort } : {}) },
  });
  return {
    log: { stdout: true, level: 'info' },
    persistence: {
      // Fixed for the life of the database: see HISTORY_SHARDS.
      numHistoryShards: HISTORY_SHARDS,
      defaultStore: 'default',
      visibilityStore: 'visibility',
      datastores: { default: sql(DATABASE.store, 20), visibility: sql(DATABASE.visibility, 10) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: host },
      pprof: { port: 0 },
      tls: temporalServerTls(o.tlsDir),
      ...(o.auth ? { authorization: temporalServerAuthorization(o.auth) } : {}),
    },
    services: {
      frontend: rpc(ports.grpc, ports.frontendMembership, ports.http),
      history: rpc(ports.historyGrpc, ports.historyMembership),
      matching: rpc(ports.matchingGrpc, ports.matchingMembership),
      worker: rpc(ports.workerGrpc, ports.workerMembership),
      ...(ports.internalFrontend ? { 'internal-frontend': rpc(ports.internalFrontend.grpc, ports.internalFrontend.membership) } : {}),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `${host}:${ports.grpc}`, httpAddress: `${host}:${ports.http}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    ...(o.auth ? { dynamicConfigClient: { filepath: path.join(o.stateDir, 'temporal', 'config', 'dynamicconfig.yaml'), pollInterval: '60s' } } : {}),
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
  };
}

/** Ready: the frontend answers and the history service owns its shards (a system call that needs them works). */
async function frontendReady(address: string, tlsDir: string, token?: () => string): Promise<boolean> {
  const conn = Connection.lazy({ address, connectTimeout: 1_000, tls: clientTls(path.join(tlsDir, 'operator')), ...(token ? { apiKey: token } : {}) });
  try {
    await conn.ensureConnected();
    await conn.workflowService.getSystemInfo({});
    await conn.workflowService.describeNamespace({ namespace: 'temporal-system' });
    return true;
  } finally {
    await conn.close();
  }
}

const START_ATTEMPTS = 3;

export async function startTemporalServer(o: TemporalServerOptions): Promise<RunningTemporalServer> {
  const root = path.join(o.stateDir, 'temporal');
  const configDir = path.join(root, 'config');
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const configFile = path.join(configDir, `${CONFIG_ENV}.yaml`);
  for (let attempt = 1; ; attempt++) {
    // The same ports as the last run when kept: its membership rows in PostgreSQL then name this server.
    const p = await o.ports.take('temporal', 9, { low: true, fresh: attempt > 1 });
    const ports: Ports = {
      grpc: p[0]!, http: p[1]!, frontendMembership: p[2]!, historyGrpc: p[3]!, historyMembership: p[4]!,
      matchingGrpc: p[5]!, matchingMembership: p[6]!, workerGrpc: p[7]!, workerMembership: p[8]!,
    };
    if (o.auth) {
      const [grpc, membership] = await o.ports.take('temporal-internal-frontend', 2, { low: true, fresh: attempt > 1 });
      ports.internalFrontend = { grpc: grpc!, membership: membership! };
    }
    fs.rmSync(configFile, { force: true });
    fs.writeFileSync(configFile, `# Written by mpf cluster up; see tools/cluster/temporal-server.ts.\n${stringify(temporalServerConfig(o, ports))}`, { mode: 0o600 });
    if (o.auth) fs.writeFileSync(path.join(configDir, 'dynamicconfig.yaml'), `# Written by mpf cluster up; see tools/cluster/temporal-server.ts.\n${stringify(AUTH_DYNAMIC_CONFIG)}`, { mode: 0o600 });
    const child = new Child(
      'temporal-server',
      o.binary,
      o.auth
        ? ['--root', root, '--config', 'config', '--env', CONFIG_ENV, 'start', ...['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((x) => ['--service', x])]
        : ['--root', root, '--config', 'config', '--env', CONFIG_ENV, '--allow-no-auth', 'start'],
      { cwd: root, env: { PATH: process.env.PATH }, logFile: path.join(o.logDir, 'temporal-server.log'), runId: o.runId },
    );
    const address = `127.0.0.1:${ports.grpc}`;
    try {
      await child.waitUntil(() => frontendReady(address, o.tlsDir, o.auth?.token), 90_000, 'serving');
    } catch (e) {
      await child.stop('SIGTERM', 10_000);
      if (e instanceof ChildExitedError && /address already in use/i.test(child.log()) && attempt < START_ATTEMPTS) continue;
      throw e;
    }
    return {
      address,
      httpAddress: `127.0.0.1:${ports.http}`,
      pid: child.pid,
      configFile,
      child,
      stop: () => child.stop('SIGTERM', 20_000),
    };
  }
}
