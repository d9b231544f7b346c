/**
 * What the demo keeps between runs, in its data folder (`.data/` in the project, or
 * MPF_DEMO_DATA_DIR), so that a second run on the same data works like the first:
 *
 *   demo-temporal.db   its Temporal dev server's database: every flow, the provider guard, the
 *                      Idempotency-Key records — their payloads sealed under the payload keys
 *   demo-keys.env      those payload keys and the merchant events' signing secret (mode 0600),
 *                      made on the first run and used again by every later one
 *   demo.env           the running demo's client settings (client-env.ts)
 *   demo-gateway.log   the gateway's log
 *
 * A database whose keys are gone (the keys file deleted, or a database from before the file was
 * kept) cannot be read by any run: it is moved aside and the demo starts afresh, saying so. Keys
 * given in PAYLOAD_ENCRYPTION_KEYS are used first, the kept ones still read what they sealed.
 * Removing demo-temporal.db and demo-keys.env starts afresh (the folder may hold other things:
 * `mpf cluster up` keeps its state in `.data/cluster/`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { PayloadDecryptionError } from '../../codec/aes-gcm-codec';
import { generateDevKeys, parseEncryptionKeys } from '../../codec/keys';
import { cliSetting } from '../../config/cli-env';
import { ConfigError } from '../../config/env';
import { providerGuardWorkflowId } from '../../contract/provider-guard';
import { generateSecret } from '../../merchant-events/signing';
import { PROJECT_ROOT } from '../../temporal/provision';

/** The demo's data folder: MPF_DEMO_DATA_DIR, else `.data` in the project. */
export function demoDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = cliSetting('MPF_DEMO_DATA_DIR', env);
  return dir ? path.resolve(dir) : path.join(PROJECT_ROOT, '.data');
}

export const demoDbFile = (dir: string): string => path.join(dir, 'demo-temporal.db');
export const demoKeysFile = (dir: string): string => path.join(dir, 'demo-keys.env');

/** A path as the user reads it: relative to the working directory when under it. */
export function shown(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}

/** The secrets of the demo's data: what its payloads are sealed under and what its events are signed with. */
export interface DemoSecrets {
  /** PAYLOAD_ENCRYPTION_KEYS of this run (the first key seals; every key reads). */
  keys: string;
  eventSecret: string;
  /** Where each came from, for the progress line. */
  keysFrom: string;
}

interface KeptSecrets {
  PAYLOAD_ENCRYPTION_KEYS: string;
  MERCHANT_WEBHOOK_SECRET?: string;
}

const shellQuote = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;

/** The kept secrets, or undefined when there is no keys file. A file that cannot be used is a ConfigError naming it. */
function readKept(file: string): KeptSecrets | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const values = Object.fromEntries([...text.matchAll(/^([A-Z_]+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]));
  const keys = values.PAYLOAD_ENCRYPTION_KEYS;
  try {
    parseEncryptionKeys(keys);
  } catch (e) {
    throw new ConfigError(`${shown(file)}: ${(e as Error).message}; restore the file, or start afresh by removing it and ${shown(demoDbFile(path.dirname(file)))}`);
  }
  return { PAYLOAD_ENCRYPTION_KEYS: keys!, ...(values.MERCHANT_WEBHOOK_SECRET ? { MERCHANT_WEBHOOK_SECRET: values.MERCHANT_WEBHOOK_SECRET } : {}) };
}

function writeKept(file: string, kept: KeptSecrets): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const lines = [
    '# merchant-payment-flows demo: the secrets its Temporal database (demo-temporal.db beside this file) is sealed and signed with.',
    '# Kept so that every run of the demo reads the flows of the runs before. Mode 0600; never printed. Deleting it makes the database unreadable.',
    ...Object.entries(kept).map(([k, v]) => `${k}=${shellQuote(v)}`),
    '',
  ];
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, lines.join('\n'), { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

/** The database and its SQLite side files (write-ahead log, shared memory). */
const dbFiles = (db: string): string[] => [db, `${db}-wal`, `${db}-shm`];

/** Moves a database nobody can read out of the way; answers where it went. */
function moveAside(db: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  const aside = path.join(path.dirname(db), `demo-temporal.unreadable-${stamp}.db`);
  for (const f of dbFiles(db)) if (fs.existsSync(f)) fs.renameSync(f, f.replace(db, aside));
  return aside;
}

/** The payload keys' ids in a PAYLOAD_ENCRYPTION_KEYS value. */
const keyIds = (keys: string): string[] => [...parseEncryptionKeys(keys).keys.keys()];

/**
 * This run's secrets when the demo runs its own Temporal on its data folder: the kept ones (the
 * first run makes and keeps them), PAYLOAD_ENCRYPTION_KEYS and MERCHANT_WEBHOOK_SECRET first when
 * given. A database left without its keys is moved aside (said on `say`), and the run starts afresh.
 */
export function demoSecrets(env: { PAYLOAD_ENCRYPTION_KEYS?: string; MERCHANT_WEBHOOK_SECRET?: string }, dir: string, say: (line: string) => void): DemoSecrets {
  const file = demoKeysFile(dir);
  const db = demoDbFile(dir);
  let kept = readKept(file);
  if (kept && (fs.statSync(file).mode & 0o077) !== 0) {
    fs.chmodSync(file, 0o600);
    say(`${shown(file)} was readable by others: made it mode 0600`);
  }
  if (!kept && !env.PAYLOAD_ENCRYPTION_KEYS && fs.existsSync(db)) {
    const aside = moveAside(db);
    say(`${shown(db)} was sealed under payload keys that are gone (no ${shown(file)}): no run can read it, so it is moved to ${shown(aside)} and the demo starts afresh (delete that file when you no longer need it)`);
  }
  if (!kept && !env.PAYLOAD_ENCRYPTION_KEYS) {
    kept = { PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), MERCHANT_WEBHOOK_SECRET: env.MERCHANT_WEBHOOK_SECRET ?? generateSecret() };
    writeKept(file, kept);
  } else if (kept && !kept.MERCHANT_WEBHOOK_SECRET && !env.MERCHANT_WEBHOOK_SECRET) {
    kept = { ...kept, MERCHANT_WEBHOOK_SECRET: generateSecret() };
    writeKept(file, kept);
  }
  const eventSecret = env.MERCHANT_WEBHOOK_SECRET ?? kept?.MERCHANT_WEBHOOK_SECRET ?? generateSecret();
  if (!env.PAYLOAD_ENCRYPTION_KEYS) return { keys: kept!.PAYLOAD_ENCRYPTION_KEYS, eventSecret, keysFrom: `kept in ${shown(file)} with the data (mode 0600)` };
  // Given keys seal; the kept ones (not given again) still read what earlier runs sealed.
  const given = new Set(keyIds(env.PAYLOAD_ENCRYPTION_KEYS));
  const older = kept ? kept.PAYLOAD_ENCRYPTION_KEYS.split(',').filter((e) => !given.has(e.slice(0, e.indexOf(':')).trim())) : [];
  return {
    keys: [env.PAYLOAD_ENCRYPTION_KEYS, ...older].join(','),
    eventSecret,
    keysFrom: `PAYLOAD_ENCRYPTION_KEYS${older.length ? `, and the keys kept in ${shown(file)} to read earlier runs` : ''}`,
  };
}

/**
 * Why the deployment's state cannot be read with this run's keys (undefined: it can): the provider
 * guard, which every provider call asks first, sealed under a key this run does not have. Such a
 * stack would hold every call; the demo stops and says what to do instead.
 */
export async function unreadableState(client: Client, taskQueue: string): Promise<string | undefined> {
  try {
    await client.withDeadline(Date.now() + 10_000, () => client.workflow.getHandle(providerGuardWorkflowId(taskQueue)).describe());
    return undefined;
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return undefined;
    let c: unknown = e;
    for (let i = 0; i < 4 && c; i++) {
      if (c instanceof PayloadDecryptionError) return `its provider guard cannot be read: ${c.message}`;
      c = (c as { cause?: unknown }).cause;
    }
    return undefined; // not a question of keys: the worker's own reading says what it is
  }
}
