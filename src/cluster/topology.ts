/**
 * The production topology, defined once. docker-compose.yml (users with Docker) and `mpf cluster
 * up` (the same services run natively on 127.0.0.1: this machine, the tests, CI) take their
 * settings from here; test/e2e/compose.test.ts fails when docker-compose.yml drifts from it.
 *
 * Only what does not depend on where things listen is here: versions and images, history shards,
 * the namespace and its retention, the schema and namespace jobs' commands, the app services'
 * command lines and the environment each one gets (every variable's name; the values that are the
 * same in both). Addresses are filled in by the caller: compose's service names and fixed ports,
 * or the native topology's free loopback ports.
 */
import { CUSTOM_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import versions from './versions.json';

export const VERSIONS = {
  /** go.temporal.io/server, and the temporalio/server image. */
  temporalServer: versions.temporalServer,
  /** github.com/temporalio/ui-server/v2, and the temporalio/ui image. */
  temporalUi: versions.temporalUi,
  /** Debian's PostgreSQL here (the compose image is postgres:16; Temporal's postgres12 plugin wants 12 or newer). */
  postgresMajor: versions.postgresMajor,
} as const;

export const IMAGES = {
  temporal: `temporalio/server:${VERSIONS.temporalServer}`,
  temporalUi: `temporalio/ui:${VERSIONS.temporalUi}`,
  /** temporal-sql-tool and the Temporal CLI, for the schema and namespace jobs. */
  adminTools: `temporalio/admin-tools:${VERSIONS.temporalServer}-tctl-1.18.4-cli-1.5.0`,
} as const;

/**
 * Number of history shards: 4. It is fixed when the cluster's database is created and can never
 * be changed afterwards without a new cluster, so it is chosen for the largest load the cluster
 * should carry, not for today's. Each shard is one unit of history ownership and serialisation;
 * 4 shards carry a few hundred flows per second (each of our flows is a handful of workflow
 * tasks), which is well beyond what one merchant's swaps and payment links need, while keeping the
 * shard-ownership overhead (timers, queues, database connections per shard) small on the small
 * machines this runs on (2 CPUs here). A cluster meant for much more load is created with more
 * (Temporal's production guidance starts at 512 for large multi-node clusters).
 */
export const HISTORY_SHARDS = 4;

export const NAMESPACE = 'default';
/** Closed flows stay visible (Temporal Web, `mpf … status`) for 3 days, then Temporal deletes them. */
export const NAMESPACE_RETENTION = '72h';
export const TASK_QUEUE = 'merchant-payment-flows';

/** Temporal's database user and databases (the postgres12 SQL plugin). */
export const DATABASE = {
  plugin: 'postgres12',
  user: 'temporal',
  databases: ['temporal', 'temporal_visibility'] as const,
  /** The databases of the default store and of visibility (SQL visibility on the same PostgreSQL). */
  store: 'temporal',
  visibility: 'temporal_visibility',
} as const;

/** The environment the temporalio/server image renders its config from (the native config YAML says the same). */
export const TEMPORAL_SERVER_ENV = {
  DB: DATABASE.plugin,
  POSTGRES_USER: DATABASE.user,
  NUM_HISTORY_SHARDS: String(HISTORY_SHARDS),
} as const;

/** One command of a one-shot job; `orElse` runs when it fails (`a || b` in compose's shell). */
export interface JobStep {
  argv: string[];
  /** compose prints this and goes on (`|| echo "…"`): the step is idempotent that way. */
  tolerate?: string;
  /** compose runs this instead when `argv` fails (`a >/dev/null 2>&1 || b`). */
  orElse?: string[];
}

/**
 * The schema job (compose's `temporal-schema`): create both databases, set up and update their
 * schemas. Re-runnable: an existing database or an already set-up schema is not an error.
 */
export function schemaJob(target: { host: string; port: number | string; schemaDir: string }): JobStep[] {
  const tool = ['temporal-sql-tool', '--plugin', DATABASE.plugin, '--ep', target.host, '-p', String(target.port), '-u', DATABASE.user];
  const steps: JobStep[] = DATABASE.databases.map((db) => ({ argv: [...tool, '--db', db, 'create'], tolerate: `database ${db} exists` }));
  for (const [db, dir] of [[DATABASE.store, 'temporal'], [DATABASE.visibility, 'visibility']] as const) {
    steps.push({ argv: [...tool, '--db', db, 'setup-schema', '-v', '0.0'], tolerate: `schema of ${db} already set up` });
    steps.push({ argv: [...tool, '--db', db, 'update-schema', '-d', `${target.schemaDir}/${dir}/versioned`] });
  }
  return steps;
}

/** The namespace job (compose's `temporal-namespace`): the namespace, then our search attributes. Re-runnable. */
export function namespaceJob(temporalAddress: string): JobStep[] {
  const base = ['temporal', 'operator'];
  const at = ['--address', temporalAddress, '-n', NAMESPACE];
  return [
    {
      argv: [...base, 'namespace', 'describe', ...at],
      orElse: [...base, 'namespace', 'create', ...at, '--retention', NAMESPACE_RETENTION],
    },
    {
      // Adding an attribute the namespace already has is a no-op (same type), so this is idempotent.
      argv: [
        ...base, 'search-attribute', 'create', ...at,
        ...Object.entries(CUSTOM_SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--name', name, '--type', type]),
      ],
    },
  ];
}

// ---- the app services (one image: worker, gateway, simulator) --------------------------------

export type AppRole = 'worker' | 'gateway' | 'simulator';

/** The image's own environment (Dockerfile ENV, less MPF_USE_DIST: natively the sources run through tsx). */
export const IMAGE_ENV = { NODE_ENV: 'production' } as const;

/** Command lines, after the image's working directory: `node bin/mpf.cjs <role> …`. */
export function appCommand(role: 'worker'): string[];
export function appCommand(role: 'gateway', at: { port: number; host: string }): string[];
export function appCommand(role: 'simulator', at: { port: number; checkoutPort: number; host: string }): string[];
export function appCommand(role: AppRole, at?: { port: number; checkoutPort?: number; host: string }): string[] {
  const mpf = ['node', 'bin/mpf.cjs', role];
  if (role === 'worker') return mpf;
  if (!at) throw new Error(`${role} needs a port and a host`);
  if (role === 'gateway') return [...mpf, '--port', String(at.port), '--host', at.host];
  return [...mpf, '--port', String(at.port), '--checkout-port', String(at.checkoutPort), '--host', at.host];
}

/**
 * Secrets, as compose's secret files (./secrets/<file>, mounted at /run/secrets/<file>) and the
 * native topology's files (<state dir>/secrets/<file>, mode 0600). Apps read them through NAME_FILE.
 */
export const SECRET_FILES = {
  postgres_password: 'postgres_password',
  payload_encryption_keys: 'payload_encryption_keys',
  mps_secret_key: 'mps_secret_key',
  mps_access_token: 'mps_access_token',
  gateway_api_key: 'gateway_api_key',
  codec_auth_token: 'codec_auth_token',
} as const;
export type SecretName = keyof typeof SECRET_FILES;

/**
 * Where an app setting comes from: the same value everywhere, an address, or a secret file. An
 * `optional` address is left out when the caller has none (a tool that runs the apps without it).
 */
export type EnvSource =
  | { value: string }
  | { address: AddressKey; optional?: true }
  | { secret: SecretName };

/** The address-dependent settings: compose's service names and ports, or native loopback ports. */
export type AddressKey =
  | 'temporalAddress'
  | 'providerBaseUrl'
  | 'gatewayPort'
  | 'gatewayHost'
  | 'gatewayPublicUrl'
  | 'gatewayNotificationBaseUrl'
  | 'temporalWebOrigin'
  | 'checkoutPublicUrl'
  | 'notificationAllowHosts'
  | 'workerMetricsAddress'
  | 'gatewayMetricsAddress';

/**
 * The port of the worker's and the gateway's operations listeners in compose (/metrics; the
 * worker's /healthz and /readyz too), never published on the host: only Prometheus and the health
 * checks inside the network reach them. Natively each replica gets a free loopback port.
 */
export const METRICS_PORT = 9464;

const temporalClient: Record<string, EnvSource> = {
  TEMPORAL_ADDRESS: { address: 'temporalAddress' },
  TEMPORAL_NAMESPACE: { value: NAMESPACE },
  TEMPORAL_TASK_QUEUE: { value: TASK_QUEUE },
  PAYLOAD_ENCRYPTION_KEYS_FILE: { secret: 'payload_encryption_keys' },
  LOG_LEVEL: { value: 'info' },
};

/** The simulator's merchant reference, which the worker sends (a stand-in: the simulator is not the live provider). */
export const SIMULATOR_MERCHANT_REF = 'demo-merchant';

/** Every variable each app service gets, by name. Secrets only as NAME_FILE. */
export const APP_ENV: Record<AppRole, Record<string, EnvSource>> = {
  worker: {
    ...temporalClient,
    MPS_BASE_URL: { address: 'providerBaseUrl' },
    MPS_MERCHANT_REF: { value: SIMULATOR_MERCHANT_REF },
    MPS_SECRET_KEY_FILE: { secret: 'mps_secret_key' },
    MPS_ACCESS_TOKEN_FILE: { secret: 'mps_access_token' },
    WORKER_METRICS_ADDRESS: { address: 'workerMetricsAddress', optional: true },
  },
  gateway: {
    ...temporalClient,
    GATEWAY_PORT: { address: 'gatewayPort' },
    GATEWAY_HOST: { address: 'gatewayHost' },
    GATEWAY_PUBLIC_URL: { address: 'gatewayPublicUrl' },
    GATEWAY_NOTIFICATION_BASE_URL: { address: 'gatewayNotificationBaseUrl' },
    GATEWAY_API_KEY_FILE: { secret: 'gateway_api_key' },
    CODEC_AUTH_TOKEN_FILE: { secret: 'codec_auth_token' },
    CODEC_CORS_ORIGINS: { address: 'temporalWebOrigin' },
    GATEWAY_METRICS_ADDRESS: { address: 'gatewayMetricsAddress', optional: true },
  },
  simulator: {
    SIMULATOR_CHECKOUT_PUBLIC_URL: { address: 'checkoutPublicUrl' },
    SIMULATOR_NOTIFICATION_ALLOW_HOSTS: { address: 'notificationAllowHosts' },
    MPS_MERCHANT_REF: { value: SIMULATOR_MERCHANT_REF },
    MPS_SECRET_KEY_FILE: { secret: 'mps_secret_key' },
    MPS_ACCESS_TOKEN_FILE: { secret: 'mps_access_token' },
    LOG_LEVEL: { value: 'info' },
  },
};

/**
 * The environment of one app service: every variable of APP_ENV[role], addresses from `addresses`
 * and secret files under `secretsDir`. Throws when an address it needs is missing, so the two
 * topologies can only differ in values, never in which variables are set.
 */
export function appEnvironment(
  role: AppRole,
  addresses: Partial<Record<AddressKey, string>>,
  secretsDir: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(APP_ENV[role])) {
    if ('value' in source) out[name] = source.value;
    else if ('secret' in source) out[name] = `${secretsDir.replace(/\/+$/, '')}/${SECRET_FILES[source.secret]}`;
    else {
      const v = addresses[source.address];
      if (v === undefined && source.optional) continue;
      if (v === undefined) throw new Error(`${role}: ${name} needs the address ${source.address}`);
      out[name] = v;
    }
  }
  return out;
}

/** Temporal Web (compose's temporal-ui; the native ui-server's config file says the same). */
export const TEMPORAL_UI_ENV_NAMES = ['TEMPORAL_ADDRESS', 'TEMPORAL_CORS_ORIGINS', 'TEMPORAL_CODEC_ENDPOINT'] as const;
