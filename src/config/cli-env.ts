/**
 * The variables only the `mpf` CLI's commands and the demo read, each by the command that needs it
 * when it runs (not at start-up, so a command never trips over another's setting). Read like every
 * other variable (NAME or NAME_FILE, empty is unset) and listed in the generated table.
 */
import { z } from 'zod';
import { ConfigError, readVariable } from './env';

export const CliEnvSchema = z.object({
  /** Set: `mpf swap|link|categories|reconcile` go through this gateway with MPF_API_KEY (no Temporal access or payload keys needed); unset: Temporal directly. */
  MPF_GATEWAY_URL: z.string().min(1).optional(),
  /** The API key of the commands that go through MPF_GATEWAY_URL; its role applies (read_only lists, backend starts, operator resolves). `mpf --api-key-file` wins; set with MPF_API_KEY_FILE, or beside MPF_ACCESS_TOKEN for `mpf reconcile|provider`, it is refused (exit 2) unless `mpf --as key|person` picks (docs/security.md); a secret. */
  MPF_API_KEY: z.string().min(1).optional(),
  /** A person's access token (a JWT of the identity provider: `mpf cluster login` writes it, cluster.env reads it), sent as `Authorization: Bearer` to the gateway's operator routes (`mpf reconcile`, `mpf provider`) so the action is audited as that person; beside an API key (MPF_API_KEY or MPF_API_KEY_FILE) both are refused there (exit 2) unless `mpf --as person|key` picks, and `mpf --api-key-file` wins over both; a secret. */
  MPF_ACCESS_TOKEN: z.string().min(1).optional(),
  /** `mpf sim`: the local simulator's address (`--sim-url` wins; unset: MPS_BASE_URL). */
  MPF_SIMULATOR_URL: z.string().min(1).optional(),
  /** `mpf web views`: Temporal Web's address the links point at (`--ui-url` wins). */
  TEMPORAL_WEB_URL: z.string().min(1).default('http://localhost:8233'),
  /** `mpf demo`: the Chromium that pays a link as a customer would (without it, the simulator's control API pays). */
  CHROMIUM_PATH: z.string().min(1).default('/usr/bin/chromium'),
  /** `mpf demo`: where it writes the running demo's client settings (mode 0600); unset: `demo.env` in its data folder (MPF_DEMO_DATA_DIR). */
  MPF_DEMO_ENV_FILE: z.string().min(1).optional(),
  /** `mpf demo`: its data folder — its Temporal database, the payload keys that database is sealed under (kept, mode 0600), its client settings and its gateway's log; unset: `.data` in the project. Removing its demo-temporal.db and demo-keys.env starts afresh. */
  MPF_DEMO_DATA_DIR: z.string().min(1).optional(),
});
export type CliEnv = z.infer<typeof CliEnvSchema>;

/** One variable of CliEnvSchema, read (NAME or NAME_FILE) and checked now; a bad value names it. */
export function cliSetting<K extends keyof CliEnv>(name: K, source: NodeJS.ProcessEnv = process.env): CliEnv[K] {
  const parsed = CliEnvSchema.shape[name].safeParse(readVariable(name, source));
  if (!parsed.success) throw new ConfigError(`${name}: ${parsed.error.issues[0]?.message ?? 'is not valid'}`);
  return parsed.data as CliEnv[K];
}

/**
 * Two settings where a command takes one (a secret's NAME and NAME_FILE, or two credentials of
 * different kinds): refused, exit 2, nothing done, since none of them is more explicit than the
 * other (a shell cannot tell `NAME=x mpf …` from an exported NAME).
 */
export class AmbiguousSettingError extends ConfigError {
  override name = 'AmbiguousSettingError';
  readonly exitCode = 2;
}

/**
 * A credential of CliEnvSchema and where it came from: `NAME`, or `NAME_FILE=<path>` (never the
 * value), for messages. Undefined when neither is set (empty is unset); both set is refused.
 */
export function cliCredentialSetting(name: 'MPF_API_KEY' | 'MPF_ACCESS_TOKEN', source: NodeJS.ProcessEnv = process.env): { value: string; from: string } | undefined {
  const direct = source[name] || undefined;
  const file = source[`${name}_FILE`] || undefined;
  if (direct !== undefined && file !== undefined) {
    throw new AmbiguousSettingError(`${name} and ${name}_FILE=${file} are both set, and mpf takes one; nothing was sent (unset one of them)`);
  }
  if (direct !== undefined) return { value: cliSetting(name, { [name]: direct })!, from: name };
  if (file === undefined) return undefined;
  const from = `${name}_FILE=${file}`;
  const value = readVariable(name, { [`${name}_FILE`]: file });
  if (!value) throw new ConfigError(`${from}: the file is empty`);
  return { value: cliSetting(name, { [name]: value })!, from };
}
