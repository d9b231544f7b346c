/**
 * The typed client for the client commands (`mpf swap|link|categories`), built from the
 * environment by client/from-env.ts, and the bound on how long a command waits for an answer.
 */
import { loadEnv, type AppEnv } from '../../config/env';
import { temporalTargetFromEnv } from '../../temporal/connection';
import { mpfClientFromEnv } from '../client/from-env';
import type { MpfClient } from '../client/mpf-client';
import { DEFAULT_WAIT_SECONDS } from './options';

export interface CliClient {
  mpf: MpfClient;
  env: AppEnv;
  close(): Promise<void>;
}

/**
 * The client's own bounds on a start's or a PIN's answer sit this far beyond the command's
 * `--wait`, so `--wait` decides when the command gives up (answerWithin, naming the task queue)
 * and the client's bound only ends the abandoned call.
 */
const CLIENT_BOUND_MARGIN_SECONDS = 5;

async function openClient(env: AppEnv, waitSeconds: number): Promise<CliClient> {
  const boundMs = (waitSeconds + CLIENT_BOUND_MARGIN_SECONDS) * 1000;
  const mpf = await mpfClientFromEnv(env, { startAnswerTimeoutMs: boundMs, pinAnswerTimeoutMs: boundMs });
  return { mpf, env, close: () => mpf.temporal.connection.close() };
}

/** Opens the client (bounds set for `waitSeconds`), runs `fn`, and always closes the connection. */
export async function withClient<T>(fn: (c: CliClient) => Promise<T>, waitSeconds = DEFAULT_WAIT_SECONDS): Promise<T> {
  const c = await openClient(loadEnv(), waitSeconds);
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

/**
 * A start hands out URLs (pin_url to the user, notification_url to the provider) built from
 * GATEWAY_PUBLIC_URL; unset, they point at `mpf gateway`'s default local address. Says so on stderr.
 */
export function noteGatewayPublicUrl(env: AppEnv): void {
  if (env.GATEWAY_PUBLIC_URL) return;
  process.stderr.write(
    `mpf: note: GATEWAY_PUBLIC_URL is not set, so pin_url and the provider's notification URL use http://127.0.0.1:${env.GATEWAY_PORT} ` +
      '(set it to your gateway; against the demo: set -a; . .data/demo.env; set +a)\n',
  );
}

class NoAnswerError extends Error {
  override name = 'NoAnswerError';
}

/**
 * Resolves with `work`, or rejects after `seconds` with a message saying what to check (no
 * worker polling the task queue is the usual cause). The connection is closed afterwards by
 * withClient, which ends the abandoned call.
 */
export async function answerWithin<T>(work: Promise<T>, seconds: number, c: CliClient, after = ''): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const target = temporalTargetFromEnv(c.env);
      reject(
        new NoAnswerError(
          `no answer within ${seconds} s: is \`mpf worker\` polling task queue ${c.env.TEMPORAL_TASK_QUEUE} on ${target.address} (namespace ${target.namespace})?${after ? ` ${after}` : ''}`,
        ),
      );
    }, seconds * 1000);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
