/**
 * `mpf worker`: the worker process configured from the environment. With MPS_BASE_URL unset it
 * embeds the provider simulator (the default everywhere but production).
 */
import { loadEnv, ConfigError, type AppEnv } from './config/env';
import { providerClientFromEnv } from './provider/client';
import { startSimulator } from './simulator';
import { connectNative, temporalTargetFromEnv } from './temporal/connection';
import { createMpfWorker } from './worker';

export function requireKeys(env: AppEnv): string {
  if (!env.PAYLOAD_ENCRYPTION_KEYS) {
    throw new ConfigError('PAYLOAD_ENCRYPTION_KEYS: is required (comma-separated keyId:base64 32-byte keys; the first encrypts)');
  }
  return env.PAYLOAD_ENCRYPTION_KEYS;
}

export async function runWorkerMain(): Promise<void> {
  const env = loadEnv();
  const keys = requireKeys(env);
  let baseUrl: string;
  let closeSim: (() => Promise<void>) | undefined;
  if (env.MPS_BASE_URL) {
    baseUrl = env.MPS_BASE_URL;
  } else {
    const sim = await startSimulator();
    baseUrl = sim.baseUrl;
    closeSim = sim.close;
    console.log(`worker: MPS_BASE_URL unset, using the embedded provider simulator at ${baseUrl}`);
  }
  const provider = providerClientFromEnv(env, baseUrl);
  const target = temporalTargetFromEnv(env);
  const connection = await connectNative(target);
  const worker = await createMpfWorker({
    connection,
    namespace: target.namespace,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    keys,
    provider,
  });
  console.log(`worker: polling task queue ${env.TEMPORAL_TASK_QUEUE} on ${target.address} (namespace ${target.namespace})`);
  // Worker.run() installs SIGINT/SIGTERM handlers that shut down gracefully.
  await worker.run();
  await provider.close();
  await connection.close();
  await closeSim?.();
}
