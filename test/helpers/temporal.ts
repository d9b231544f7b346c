/**
 * The real Temporal server tests run against. `npm test` starts one dev server for the whole run
 * and passes its address in MPF_TEST_TEMPORAL_ADDRESS; a test file run on its own starts its own
 * (or uses TEMPORAL_ADDRESS). Never a mock: if no server can be provisioned, this throws the
 * provisioning script's message and the test fails.
 */
import { Connection, Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { codecWebEndpoint, startCodecServer, type StartedCodecServer } from '../../src/codec/codec-server';
import type { KeyRing } from '../../src/codec/keys';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { freePort } from '../../src/temporal/ports';
import { ensureSearchAttributes } from '../../src/temporal/search-attributes-admin';

export interface TestTemporal {
  address: string;
  namespace: string;
  /** Set when this process started the server itself. */
  server?: DevServer;
  shutdown(): Promise<void>;
}

// Worker logs at WARN: the SDK's INFO lines (worker state changes) drown the test output.
Runtime.install({ logger: new DefaultLogger('WARN') });

let shared: Promise<TestTemporal> | undefined;

export function getTestTemporal(): Promise<TestTemporal> {
  shared ??= (async () => {
    const external = process.env.MPF_TEST_TEMPORAL_ADDRESS ?? process.env.TEMPORAL_ADDRESS;
    const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
    if (external) {
      const conn = await Connection.connect({ address: external });
      await ensureSearchAttributes(conn, namespace);
      await conn.close();
      return { address: external, namespace, shutdown: async () => {} };
    }
    const server = await startDevServer({ unref: true });
    return { address: server.address, namespace: server.namespace, server, shutdown: () => server.stop() };
  })();
  return shared;
}

/** A client + native connection pair for one test file; close them in after(). */
export async function connectTest(): Promise<{
  temporal: TestTemporal;
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  close(): Promise<void>;
}> {
  const temporal = await getTestTemporal();
  const connection = await Connection.connect({ address: temporal.address });
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: temporal.namespace });
  return {
    temporal,
    client,
    connection,
    nativeConnection,
    async close() {
      await connection.close();
      await nativeConnection.close();
      await temporal.shutdown();
    },
  };
}

export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * A dev server of the test's own with Temporal Web, handed the capability URL of a codec server
 * started for it (which allows the UI's origin). The UI's port is chosen before either starts, so
 * another process may take it first on a busy machine: up to three attempts.
 */
export async function startDevServerWithCodec(keys: string | KeyRing, codecToken: string): Promise<{ server: DevServer; codec: StartedCodecServer }> {
  for (let attempt = 1; ; attempt++) {
    const uiPort = await freePort();
    const codec = await startCodecServer({ port: 0, keys, authToken: codecToken, corsOrigins: [`http://127.0.0.1:${uiPort}`] });
    try {
      const server = await startDevServer({ ui: true, uiPort, uiCodecEndpoint: codecWebEndpoint(codec.url, codecToken), unref: true });
      return { server, codec };
    } catch (e) {
      await codec.close();
      if (attempt >= 3 || !/address already in use/.test((e as Error).message)) throw e;
    }
  }
}
