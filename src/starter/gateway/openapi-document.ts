/**
 * The gateway's OpenAPI document without a running stack: the app is built (never listening) on a
 * lazy Temporal connection that is never dialled, with the codec server mounted, as `mpf gateway`
 * mounts it when CODEC_AUTH_TOKEN is set. Used by `npm run openapi` (docs/gateway-openapi.json and
 * the generated HTTP client's types) and by the tests that check them.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { generateDevKeys } from '../../codec/keys';
import { MpfClient } from '../client/mpf-client';
import { buildGateway } from './app';

export async function offlineOpenApiDocument(): Promise<Record<string, unknown>> {
  const keys = generateDevKeys();
  const connection = Connection.lazy({ address: '127.0.0.1:9' });
  const mpf = new MpfClient({ client: new Client({ connection }), taskQueue: 'openapi', keys, publicUrl: 'http://127.0.0.1:8080' });
  const app = await buildGateway({
    mpf,
    apiKey: randomBytes(24).toString('base64url'),
    codec: { keys, authToken: randomBytes(24).toString('base64url'), corsOrigins: [] },
  });
  try {
    return structuredClone(app.swagger()) as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await connection.close().catch(() => undefined);
  }
}
