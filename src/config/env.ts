/**
 * Process configuration, validated with zod at start-up. Every variable may also be read from
 * NAME_FILE (a path), for secrets stores. A bad value is an error naming the variable.
 * Secrets are read here by the worker and gateway, never passed as workflow inputs.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

const optionalNonEmpty = z.string().min(1).optional();
const port = z.coerce.number().int().min(0).max(65535);
const flag = z.enum(['0', '1', 'true', 'false']).optional().transform((v) => v === '1' || v === 'true');

export const EnvSchema = z
  .object({
    MPS_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
    MPS_SECRET_KEY: optionalNonEmpty,
    MPS_ACCESS_TOKEN: optionalNonEmpty,
    MPS_MERCHANT_REF: optionalNonEmpty,
    MPS_LIVE: flag,
    MPS_CATEGORIES_BEARER: flag,
    TEMPORAL_ADDRESS: optionalNonEmpty,
    TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
    TEMPORAL_TASK_QUEUE: z.string().min(1).default('merchant-payment-flows'),
    GATEWAY_PORT: port.default(8080),
    GATEWAY_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
    GATEWAY_API_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
    PAYLOAD_ENCRYPTION_KEYS: optionalNonEmpty,
    SWAP_PIN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
    SWAP_NOTIFICATION_WAIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(0),
    LINK_LIFETIME_SECONDS: z.coerce.number().int().min(1).max(30 * 86_400).default(86_400),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .superRefine((env, ctx) => {
    if (env.MPS_BASE_URL && !isLoopbackUrl(env.MPS_BASE_URL) && !env.MPS_LIVE) {
      ctx.addIssue({
        code: 'custom',
        path: ['MPS_BASE_URL'],
        message: 'is not a loopback address; set MPS_LIVE=1 to dial the live provider (every call moves real money)',
      });
    }
  });
export type AppEnv = z.infer<typeof EnvSchema>;

/** Reads NAME or NAME_FILE for every known variable; NAME wins when both are set. */
export function collectEnv(source: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const key of Object.keys(EnvSchema.shape)) {
    const direct = source[key];
    const file = source[`${key}_FILE`];
    if (direct !== undefined && direct !== '') out[key] = direct;
    else if (file) {
      try {
        out[key] = readFileSync(file, 'utf8').trim();
      } catch (e) {
        throw new ConfigError(`${key}_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
  }
  return out;
}

export function loadEnv(source: NodeJS.ProcessEnv = process.env): AppEnv {
  const parsed = EnvSchema.safeParse(collectEnv(source));
  if (!parsed.success) {
    // Name the variable and the rule; never echo the value (it may be a secret).
    const msg = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${msg}`);
  }
  return parsed.data;
}
