/**
 * The interactive demo's client settings: everything a client of the running demo needs, in one
 * shell file of mode 0600 (`.data/demo.env`, or MPF_DEMO_ENV_FILE), so that
 *
 *   set -a; . .data/demo.env; set +a
 *
 * makes every `mpf` client command (and the SDK's mpfClientFromEnv, and the Temporal CLI with the
 * codec endpoint) work against it. It holds this run's secrets (payload keys, API key, codec token):
 * they are written here and never printed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cliSetting } from '../../config/cli-env';
import { demoDataDir } from './data';

export interface DemoClientSettings {
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
  TEMPORAL_TASK_QUEUE: string;
  PAYLOAD_ENCRYPTION_KEYS: string;
  /** The demo's gateway: what `mpf` puts in pin_url and notification URLs. */
  GATEWAY_PUBLIC_URL: string;
  GATEWAY_API_KEY: string;
  CODEC_AUTH_TOKEN: string;
  /** For `temporal workflow show --codec-endpoint "$MPF_CODEC_ENDPOINT" --codec-auth "Bearer $CODEC_AUTH_TOKEN"`. */
  MPF_CODEC_ENDPOINT: string;
  TEMPORAL_UI_URL?: string;
  /** The merchant events' signing secret, for `mpf events listen` (verifies deliveries). */
  MERCHANT_WEBHOOK_SECRET?: string;
  /** The demo's provider simulator (its control API), for `mpf sim pay`. */
  MPF_SIMULATOR_URL?: string;
  /** PATH with the provisioned Temporal CLI first, so `temporal workflow show …` works in a fresh shell. */
  PATH?: string;
}

/** Where the settings go: MPF_DEMO_ENV_FILE, else demo.env in the demo's data folder (`.data/`, or MPF_DEMO_DATA_DIR). */
export function demoEnvFile(env: NodeJS.ProcessEnv = process.env): string {
  const file = cliSetting('MPF_DEMO_ENV_FILE', env);
  return file ? path.resolve(file) : path.join(demoDataDir(env), 'demo.env');
}

/** A value as a single-quoted shell word. */
const shellQuote = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;

/** Writes the settings (mode 0600, its directory created 0700 when missing); returns the file. */
export function writeDemoClientEnv(settings: DemoClientSettings, file = demoEnvFile()): string {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const lines = [
    `# merchant-payment-flows: the running interactive demo's client settings (pid ${process.pid}, ${new Date().toISOString()}).`,
    '# Secrets of this run (payload keys, API key, codec token): mode 0600, never printed. Load them with:',
    `#   set -a; . ${shellQuote(file)}; set +a`,
    ...Object.entries(settings)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${shellQuote(String(v))}`),
    '',
  ];
  // Written to a fresh file of mode 0600, then renamed over the old one: never readable by others, never half-written.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, lines.join('\n'), { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
  return file;
}
