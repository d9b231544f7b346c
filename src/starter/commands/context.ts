/**
 * What the client commands share: the typed client built from the environment (Temporal target,
 * task queue, payload keys, GATEWAY_PUBLIC_URL for PIN URLs and GATEWAY_NOTIFICATION_BASE_URL or
 * GATEWAY_PUBLIC_URL for notification URLs), and output helpers.
 */
import { connectClient, temporalTargetFromEnv } from '../../temporal/connection';
import { loadEnv, requireKeys, type AppEnv } from '../../config/env';
import { MpfClient } from '../client';

export interface CliClient {
  mpf: MpfClient;
  env: AppEnv;
  close(): Promise<void>;
}

/** GATEWAY_PUBLIC_URL, else the gateway's default local address. */
export function gatewayPublicUrl(env: AppEnv): string {
  return env.GATEWAY_PUBLIC_URL ?? `http://127.0.0.1:${env.GATEWAY_PORT}`;
}

/** How long a command waits for the worker by default (`--wait` changes it). */
export const DEFAULT_WAIT_SECONDS = 60;

/**
 * The client's own bounds on a start's or a PIN's answer sit this far beyond the command's
 * `--wait`, so `--wait` decides when the command gives up (answerWithin, naming the task queue)
 * and the client's bound only ends the abandoned call.
 */
const CLIENT_BOUND_MARGIN_SECONDS = 5;

export async function openClient(env: AppEnv = loadEnv(), waitSeconds = DEFAULT_WAIT_SECONDS): Promise<CliClient> {
  const keys = requireKeys(env);
  const target = temporalTargetFromEnv(env);
  const client = await connectClient(target, keys); // a TemporalConnectError names the address
  const mpf = new MpfClient({
    client,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    keys,
    publicUrl: gatewayPublicUrl(env),
    notificationBaseUrl: env.GATEWAY_NOTIFICATION_BASE_URL,
    pinMaxAttempts: env.SWAP_PIN_MAX_ATTEMPTS,
    swapNotificationWaitSeconds: env.SWAP_NOTIFICATION_WAIT_SECONDS,
    linkLifetimeSeconds: env.LINK_LIFETIME_SECONDS,
    linkLateNotificationGraceSeconds: env.LINK_LATE_NOTIFICATION_GRACE_SECONDS,
    startAnswerTimeoutMs: (waitSeconds + CLIENT_BOUND_MARGIN_SECONDS) * 1000,
    pinAnswerTimeoutMs: (waitSeconds + CLIENT_BOUND_MARGIN_SECONDS) * 1000,
  });
  return { mpf, env, close: () => client.connection.close() };
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

export class NoAnswerError extends Error {
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

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLines(lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** "  label     value" rows with the labels padded to one width. */
export function rows(pairs: Array<[string, string | number | undefined]>, indent = '  '): string[] {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== '');
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${indent}${k.padEnd(width)}  ${String(v)}`);
}

export function formatAmount(n: number | undefined, currency: string): string | undefined {
  if (n === undefined) return undefined;
  const decimals = Number.isInteger(n) ? 0 : 2;
  return `${n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: 8 })} ${currency}`;
}

/** "2025-01-01T10:00:00.000Z (in 4 min 55 s)". */
export function withTimeLeft(iso: string | undefined, now = Date.now()): string | undefined {
  if (!iso) return undefined;
  const ms = Date.parse(iso) - now;
  if (!Number.isFinite(ms)) return iso;
  if (ms <= 0) return `${iso} (passed)`;
  const s = Math.round(ms / 1000);
  const left = s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
  return `${iso} (in ${left})`;
}
