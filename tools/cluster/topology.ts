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
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
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
/**
 * Closed flows stay (Temporal Web, `mpf … status`, and the merchant events kept in their memos,
 * GET /v1/events) for 30 days, then Temporal deletes them. MPF_NAMESPACE_RETENTION sets another, in
 * hours (compose reads the same variable); docs/operations/scaling.md says what it costs.
 */
export const NAMESPACE_RETENTION = '720h';
export const RETENTION_VARIABLE = 'MPF_NAMESPACE_RETENTION';

/** The namespace's retention from MPF_NAMESPACE_RETENTION (`<hours>h`, at least 24h: Temporal's minimum), or the default. */
export function retentionFromEnvironment(env: NodeJS.ProcessEnv): string {
  const v = env[RETENTION_VARIABLE]?.trim();
  if (!v) return NAMESPACE_RETENTION;
  const hours = /^([1-9][0-9]{0,5})h$/.exec(v)?.[1];
  if (!hours || Number(hours) < 24) throw new Error(`${RETENTION_VARIABLE}: must be hours, at least 24h (e.g. 720h for 30 days), not ${JSON.stringify(v)}`);
  return `${Number(hours)}h`;
}
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

/**
 * The namespace job (compose's `temporal-namespace`): the namespace with its retention (set again on
 * an existing one, so the configured retention holds), then our search attributes. Re-runnable.
 */
export function namespaceJob(temporalAddress: string, retention: string = NAMESPACE_RETENTION): JobStep[] {
  const base = ['temporal', 'operator'];
  const at = ['--address', temporalAddress, '-n', NAMESPACE];
  return [
    {
      argv: [...base, 'namespace', 'describe', ...at],
      orElse: [...base, 'namespace', 'create', ...at, '--retention', retention],
    },
    { argv: [...base, 'namespace', 'update', ...at, '--retention', retention] },
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

/**
 * The flow settings an operator may give every worker and gateway of `mpf cluster up`
 * (`--app-env NAME=VALUE`), as compose's environment would: how long a confirmation in doubt
 * waits, a link's lifetime and grace, the PIN cap. Nothing else: addresses, secrets and
 * certificates are the topology's.
 */
export const FLOW_SETTINGS = [
  'SWAP_SETTLE_WAIT_SECONDS', 'SWAP_NOTIFICATION_WAIT_SECONDS', 'SWAP_PIN_MAX_ATTEMPTS',
  'LINK_LIFETIME_SECONDS', 'LINK_LATE_NOTIFICATION_GRACE_SECONDS', 'LOG_LEVEL',
  // Where API callers' webhook endpoints may point; `127.0.0.1` admits a receiver on this machine.
  'MERCHANT_WEBHOOK_ALLOWED_HOSTS',
] as const;

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
  codec_auth_token: 'codec_auth_token',
  merchant_webhook_secret: 'merchant_webhook_secret',
} as const;
export type SecretName = keyof typeof SECRET_FILES;

/**
 * How each secret is made: `bytes` random bytes, hex or base64, after a prefix. The native topology
 * draws them with crypto.randomBytes (secrets.ts); compose's `secrets` job with `openssl rand`
 * (secretsJob below). The payload key is `k1:<base64 of 32 bytes>`; the merchant-event signing
 * secret `whsec_<base64 of 32 bytes>`, as `mpf events secret` makes one.
 */
export const SECRET_RECIPES: Record<SecretName, { bytes: number; encoding: 'hex' | 'base64'; prefix?: string }> = {
  postgres_password: { bytes: 24, encoding: 'hex' },
  payload_encryption_keys: { bytes: 32, encoding: 'base64', prefix: 'k1:' },
  mps_secret_key: { bytes: 24, encoding: 'hex' },
  mps_access_token: { bytes: 24, encoding: 'hex' },
  codec_auth_token: { bytes: 24, encoding: 'hex' },
  merchant_webhook_secret: { bytes: 32, encoding: 'base64', prefix: 'whsec_' },
};

// ---- compose's identity provider (the `idp` service; natively tools/cluster/idp.ts) -----------

/**
 * compose's IdP is the same node-oidc-provider code (tools/cluster/idp-server.ts, its people and
 * clients from idp.ts), served over https (workers and gateways take a token only from an https
 * issuer off loopback) with a certificate of the stack's CA for the name below. `idp.localhost` is
 * the one name both sides reach: the containers through its network alias, the operator's browser
 * because browsers resolve every *.localhost name to loopback, where compose publishes the port.
 */
export const COMPOSE_IDP = {
  host: 'idp.localhost',
  port: 9443,
  issuer: 'https://idp.localhost:9443',
  jwksUrl: 'https://idp.localhost:9443/jwks',
  tokenUrl: 'https://idp.localhost:9443/token',
} as const;

/**
 * The IdP's secrets as compose's `secrets` job makes them, named as idp.ts's idpSecretFiles names
 * them natively (test/e2e/compose.test.ts compares the names): the signing key (a P-256 key in
 * PEM, which the idp service publishes as a JWK; natively a JWK file), the cookie key, one
 * password per person, one secret per client. Recipes as prepareIdpSecrets draws them.
 */
export const COMPOSE_IDP_SECRET_NAMES = [
  'idp_signing_key', 'idp_cookie_key',
  'idp_password_viewer', 'idp_password_operator', 'idp_password_administrator', 'idp_password_support', 'idp_password_finance',
  'idp_client_secret_mpf-worker', 'idp_client_secret_mpf-gateway', 'idp_client_secret_mpf-admin-tools', 'idp_client_secret_temporal-ui',
] as const;
export type ComposeIdpSecretName = (typeof COMPOSE_IDP_SECRET_NAMES)[number];
export type ComposeSecretName = SecretName | ComposeIdpSecretName;
export type IdpSecretRecipe = { ecP256: true } | { bytes: number; encoding: 'hex' | 'base64' };
export const COMPOSE_IDP_SECRET_RECIPES: Record<ComposeIdpSecretName, IdpSecretRecipe> = {
  idp_signing_key: { ecP256: true },
  idp_cookie_key: { bytes: 32, encoding: 'hex' },
  idp_password_viewer: { bytes: 18, encoding: 'base64' },
  idp_password_operator: { bytes: 18, encoding: 'base64' },
  idp_password_administrator: { bytes: 18, encoding: 'base64' },
  idp_password_support: { bytes: 18, encoding: 'base64' },
  idp_password_finance: { bytes: 18, encoding: 'base64' },
  'idp_client_secret_mpf-worker': { bytes: 32, encoding: 'hex' },
  'idp_client_secret_mpf-gateway': { bytes: 32, encoding: 'hex' },
  'idp_client_secret_mpf-admin-tools': { bytes: 32, encoding: 'hex' },
  'idp_client_secret_temporal-ui': { bytes: 32, encoding: 'hex' },
};

/**
 * compose's secrets: each reading service mounts a volume of its own at /run/secrets, holding only
 * the secrets it reads, each file 0600 and owned by the image's user (`uid`: the app image's
 * `node`, the Temporal images' `temporal`, both 1000; postgres:16's `postgres`, 999). The
 * `secrets` job makes every secret once into a volume only it mounts, and copies them into these
 * volumes on every run (so a secret edited there reaches its readers at the next `up`).
 */
export const COMPOSE_SECRET_VOLUMES: Array<{ volume: string; services: string[]; uid: number; secrets: ComposeSecretName[] }> = [
  { volume: 'secrets-postgresql', services: ['postgresql'], uid: 999, secrets: ['postgres_password'] },
  { volume: 'secrets-temporal', services: ['temporal-schema', 'temporal'], uid: 1000, secrets: ['postgres_password'] },
  { volume: 'secrets-worker', services: ['worker'], uid: 1000, secrets: ['payload_encryption_keys', 'mps_secret_key', 'mps_access_token', 'merchant_webhook_secret', 'idp_client_secret_mpf-worker'] },
  { volume: 'secrets-gateway', services: ['gateway'], uid: 1000, secrets: ['payload_encryption_keys', 'codec_auth_token', 'idp_client_secret_mpf-gateway'] },
  { volume: 'secrets-simulator', services: ['simulator'], uid: 1000, secrets: ['mps_secret_key', 'mps_access_token'] },
  { volume: 'secrets-events', services: ['events'], uid: 1000, secrets: ['merchant_webhook_secret'] },
  // The identity provider: its signing and cookie keys, the people's passwords, every client's secret.
  { volume: 'secrets-idp', services: ['idp'], uid: 1000, secrets: [...COMPOSE_IDP_SECRET_NAMES] },
  // The admin tools' client (the namespace job's token, as `mpf cluster up`'s), read by the one-shot job that fetches it.
  { volume: 'secrets-admin-token', services: ['admin-token'], uid: 1000, secrets: ['idp_client_secret_mpf-admin-tools'] },
  { volume: 'secrets-temporal-ui', services: ['temporal-ui'], uid: 1000, secrets: ['idp_client_secret_temporal-ui'] },
  // Temporal Web's codec endpoint behind sign-in (as `mpf cluster up`'s codec process reads them).
  { volume: 'secrets-codec', services: ['codec'], uid: 1000, secrets: ['payload_encryption_keys', 'codec_auth_token'] },
];

/** A compose secret's file name (SECRET_FILES' for the apps' secrets; the IdP's are named as idp.ts names them). */
export const composeSecretFile = (name: ComposeSecretName): string => (name in SECRET_FILES ? SECRET_FILES[name as SecretName] : name);

/**
 * compose's `secrets` job, as its shell runs it (`$(…)`; the compose file writes `$$(…)`): each
 * secret made once under `dir` (kept when it exists: the database's password and the payload key
 * of the flows it holds must outlive a restart), then each reader's copy under `<into>/<volume>`.
 */
export function secretsJob(dir: string, into: string): string[] {
  const make = (Object.entries(SECRET_RECIPES) as Array<[SecretName, (typeof SECRET_RECIPES)[SecretName]]>).map(([name, r]) =>
    `[ -s ${SECRET_FILES[name]} ] || printf '${r.prefix ?? ''}%s\\n' "$(openssl rand -${r.encoding} ${r.bytes})" > ${SECRET_FILES[name]}`);
  const makeIdp = (Object.entries(COMPOSE_IDP_SECRET_RECIPES) as Array<[ComposeIdpSecretName, IdpSecretRecipe]>).map(([name, r]) =>
    'ecP256' in r
      ? `[ -s ${name} ] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ${name}`
      : `[ -s ${name} ] || printf '%s\\n' "$(openssl rand -${r.encoding} ${r.bytes})" > ${name}`);
  const copy = COMPOSE_SECRET_VOLUMES.map(({ volume, uid, secrets }) => {
    const d = `${into}/${volume}`;
    return `cp ${secrets.map(composeSecretFile).join(' ')} ${d}/ && chown -R ${uid}:${uid} ${d} && chmod 700 ${d} && chmod 600 ${d}/*`;
  });
  return ['umask 077', `cd ${dir}`, ...make, ...makeIdp, ...copy];
}

// ---- The gateway's API keys -------------------------------------------------------------------

/**
 * Least privilege as shipped: the gateways read a keyring (GATEWAY_API_KEYS_FILE, re-read when it
 * changes) of one key per role, and no key of every right by default. Each key is in its own file
 * (mode 0600) beside the keyring: the backend's key for the merchant backend, the read-only key for
 * dashboards and support, the operator's key for /v1/admin/* (cluster.env gives it to the
 * operator's shell). Compose's `api-keys` job and `mpf cluster up` make them the same way: with
 * `mpf keys new` (auth/keyring-file.ts), once, keeping existing ones.
 */
export const API_KEYS = [
  // Labels are one word: compose's job writes each command on one line, split at spaces.
  { id: 'backend', role: 'backend', label: 'merchant-backend', file: 'api_key_backend' },
  { id: 'read-only', role: 'read_only', label: 'dashboards-and-support', file: 'api_key_read_only' },
  { id: 'operator', role: 'operator', label: 'operator-runbook', file: 'api_key_operator' },
] as const;
export type ApiKeyRole = (typeof API_KEYS)[number]['role'];
/** The file of the key of `role` (in the secrets' directory natively, the api-keys volume in compose). */
export const apiKeyFile = (role: ApiKeyRole): string => API_KEYS.find((k) => k.role === role)!.file;
/** The keyring file (ids, roles and SHA-256 digests; no key) every gateway reads. */
export const KEYRING_FILE = 'gateway_api_keys';

/** compose's `api-keys` job: one `mpf keys new` per key, adding its entry to the keyring in `keyringDir` and writing the key to `keysDir`. */
export function apiKeysJob(keyringDir: string, keysDir: string): string[][] {
  return API_KEYS.map((k) => [
    'node', 'bin/mpf.cjs', 'keys', 'new', '--role', k.role, '--id', k.id, '--label', k.label,
    '--keyring', `${keyringDir}/${KEYRING_FILE}`, '--key-file', `${keysDir}/${k.file}`,
  ]);
}

// ---- mTLS to Temporal -------------------------------------------------------------------------

/**
 * Every connection to the Temporal frontend is mutual TLS: the frontend requires a client
 * certificate signed by the topology's private CA, and the server's own services (history,
 * matching, the internal worker) talk to each other with mTLS too. The certificates are made by
 * the system's `openssl` with the commands below (compose's `temporal-certs` job runs the same
 * ones; test/compose.test.ts compares them), one directory per component:
 *
 *   ca/key.pem ca/cert.pem               the private CA (its key never leaves this directory)
 *   <component>/key.pem cert.pem ca.pem  a component's key, its certificate, and the CA's certificate
 *
 * Paths are relative: the commands run in the certificate directory (<state dir>/tls natively,
 * the temporal-tls volume's root in compose). Each service gets only its own directory.
 */
export const TLS_NAMES = {
  /** The name the frontend's certificate carries; every client checks it (TEMPORAL_TLS_SERVER_NAME). */
  frontend: 'temporal',
  /** The name of the internode certificate, which the server's own services check. */
  internode: 'temporal-internode',
} as const;

/** A component's certificate: the frontend's and the internode one are servers, the rest clients. */
export type TlsKind = 'frontend' | 'internode' | 'client' | 'server';
export interface TlsComponent {
  name: string;
  kind: TlsKind;
  /** A `server`'s DNS names (compose's identity provider). */
  names?: string[];
}

/** Lifetimes: the CA 10 years, a component's certificate 825 days (the longest browsers accept). */
export const TLS_DAYS = { ca: 3650, component: 825 } as const;
export const TLS_FILES = { key: 'key.pem', cert: 'cert.pem', ca: 'ca.pem' } as const;

const SUBJECT_O = '/O=merchant-payment-flows';
const newKey = (out: string) => ['openssl', 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out];

/** The CA's two commands: its key, then its self-signed certificate. */
export function tlsCaJob(): JobStep[] {
  return [
    { argv: newKey('ca/key.pem') },
    {
      argv: [
        'openssl', 'req', '-x509', '-new', '-key', 'ca/key.pem', '-sha256', '-days', String(TLS_DAYS.ca), '-subj', `${SUBJECT_O}/CN=mpf-temporal-ca`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', 'ca/cert.pem',
      ],
    },
  ];
}

/** One component's commands (into directory `d`, its name by default): a new key, a request, the certificate the CA signs, and a copy of the CA's certificate. */
export function tlsComponentJob(c: TlsComponent, d = c.name): JobStep[] {
  const names =
    c.kind === 'frontend' ? `DNS:${TLS_NAMES.frontend},DNS:localhost,IP:127.0.0.1`
      : c.kind === 'internode' ? `DNS:${TLS_NAMES.internode},IP:127.0.0.1`
        : c.kind === 'server' ? (c.names ?? [c.name]).map((n) => `DNS:${n}`).join(',')
          : `DNS:${c.name}`;
  // The frontend's and internode certificates are clients too: the server's internal worker and
  // services present them when they call the frontend or each other.
  const usage = c.kind === 'client' ? 'clientAuth' : c.kind === 'server' ? 'serverAuth' : 'serverAuth,clientAuth';
  return [
    { argv: newKey(`${d}/${TLS_FILES.key}`) },
    {
      argv: [
        'openssl', 'req', '-new', '-key', `${d}/${TLS_FILES.key}`, '-subj', `${SUBJECT_O}/CN=${c.name}`,
        '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature',
        '-addext', `extendedKeyUsage=${usage}`, '-addext', `subjectAltName=${names}`, '-out', `${d}/request.pem`,
      ],
    },
    {
      argv: [
        'openssl', 'x509', '-req', '-in', `${d}/request.pem`, '-CA', 'ca/cert.pem', '-CAkey', 'ca/key.pem', '-copy_extensions', 'copyall',
        '-days', String(TLS_DAYS.component), '-sha256', '-out', `${d}/${TLS_FILES.cert}`,
      ],
    },
    { argv: ['openssl', 'x509', '-in', 'ca/cert.pem', '-out', `${d}/${TLS_FILES.ca}`] },
  ];
}

/** The components of a topology: the server's two, then one client per process that calls the frontend. */
export function tlsComponents(o: { workers: string[]; gateways: string[] }): TlsComponent[] {
  return [
    { name: 'frontend', kind: 'frontend' },
    { name: 'internode', kind: 'internode' },
    ...[...o.workers, ...o.gateways, 'temporal-ui', 'operator'].map((name) => ({ name, kind: 'client' as const })),
  ];
}

/** compose's certificates: `mpf cluster up`'s for one worker and one gateway service, then the identity provider's and the person codec's (https). */
export const COMPOSE_TLS_COMPONENTS: TlsComponent[] = [
  ...tlsComponents({ workers: ['worker'], gateways: ['gateway'] }),
  { name: 'idp', kind: 'server', names: [COMPOSE_IDP.host] },
  // Temporal Web's codec endpoint behind sign-in, which the operator's browser calls at localhost (natively `codec/`, for 127.0.0.1).
  { name: 'codec', kind: 'server', names: ['localhost'] },
];

/** The whole certificate job: the CA, then each component. */
export function tlsJob(components: TlsComponent[]): JobStep[] {
  return [...tlsCaJob(), ...components.flatMap((c) => tlsComponentJob(c))];
}

/**
 * The Temporal server's TLS settings, as the environment the temporalio/server image renders its
 * config from (`dir`: where the server's certificate directories are). The native config file says
 * the same (temporal-server.ts). Both client CA slots name the one CA file: to rotate the CA, that
 * file holds the old and the new CA's certificates while clients move.
 */
export function temporalServerTlsEnv(dir: string): Record<string, string> {
  const d = dir.replace(/\/+$/, '');
  return {
    TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true',
    TEMPORAL_TLS_SERVER_CERT: `${d}/internode/${TLS_FILES.cert}`,
    TEMPORAL_TLS_SERVER_KEY: `${d}/internode/${TLS_FILES.key}`,
    TEMPORAL_TLS_SERVER_CA_CERT: `${d}/internode/${TLS_FILES.ca}`,
    TEMPORAL_TLS_INTERNODE_SERVER_NAME: TLS_NAMES.internode,
    TEMPORAL_TLS_FRONTEND_CERT: `${d}/frontend/${TLS_FILES.cert}`,
    TEMPORAL_TLS_FRONTEND_KEY: `${d}/frontend/${TLS_FILES.key}`,
    TEMPORAL_TLS_CLIENT1_CA_CERT: `${d}/frontend/${TLS_FILES.ca}`,
    TEMPORAL_TLS_CLIENT2_CA_CERT: `${d}/frontend/${TLS_FILES.ca}`,
    TEMPORAL_TLS_FRONTEND_SERVER_NAME: TLS_NAMES.frontend,
    // Certificate files are read again this often: a renewed certificate or CA bundle needs no restart.
    TEMPORAL_TLS_REFRESH_INTERVAL: '30s',
  };
}

/** The envconfig TLS settings of a Temporal client whose certificate directory is `dir` (the SDK and the `temporal` CLI read them). */
export function temporalClientTlsEnv(dir: string): Record<string, string> {
  const d = dir.replace(/\/+$/, '');
  return {
    TEMPORAL_TLS_CLIENT_CERT_PATH: `${d}/${TLS_FILES.cert}`,
    TEMPORAL_TLS_CLIENT_KEY_PATH: `${d}/${TLS_FILES.key}`,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: `${d}/${TLS_FILES.ca}`,
    TEMPORAL_TLS_SERVER_NAME: TLS_NAMES.frontend,
  };
}

/** Temporal Web's TLS settings (the temporalio/ui image's variables; the native ui-server config says the same). */
export function temporalUiTlsEnv(dir: string): Record<string, string> {
  const d = dir.replace(/\/+$/, '');
  return {
    TEMPORAL_TLS_CA: `${d}/${TLS_FILES.ca}`,
    TEMPORAL_TLS_CERT: `${d}/${TLS_FILES.cert}`,
    TEMPORAL_TLS_KEY: `${d}/${TLS_FILES.key}`,
    TEMPORAL_TLS_SERVER_NAME: TLS_NAMES.frontend,
    TEMPORAL_TLS_ENABLE_HOST_VERIFICATION: 'true',
  };
}

/**
 * Where an app setting comes from: the same value everywhere, an address, a secret file, or a file
 * of the app's own certificate directory. An `optional` address is left out when the caller has
 * none (a tool that runs the apps without it).
 */
export type EnvSource =
  | { value: string }
  | { address: AddressKey; optional?: true }
  | { secret: SecretName }
  | { keyring: true }
  | { tls: keyof typeof TLS_FILES };

/** The address-dependent settings: compose's service names and ports, or native loopback ports. */
export type AddressKey =
  | 'temporalAddress'
  | 'providerBaseUrl'
  | 'simulatorUpstream'
  | 'providerLive'
  | 'merchantRef'
  | 'merchantWebhookUrl'
  | 'gatewayTrustProxy'
  | 'gatewayPort'
  | 'gatewayHost'
  | 'gatewayPublicUrl'
  | 'gatewayNotificationBaseUrl'
  | 'temporalWebOrigin'
  | 'checkoutPublicUrl'
  | 'notificationAllowHosts'
  | 'simulatorStateFile'
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
  // The envconfig TLS settings (what temporalClientTlsEnv says): the app's certificate directory.
  TEMPORAL_TLS_CLIENT_CERT_PATH: { tls: 'cert' },
  TEMPORAL_TLS_CLIENT_KEY_PATH: { tls: 'key' },
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: { tls: 'ca' },
  TEMPORAL_TLS_SERVER_NAME: { value: TLS_NAMES.frontend },
  TEMPORAL_NAMESPACE: { value: NAMESPACE },
  TEMPORAL_TASK_QUEUE: { value: TASK_QUEUE },
  PAYLOAD_ENCRYPTION_KEYS_FILE: { secret: 'payload_encryption_keys' },
  LOG_LEVEL: { value: 'info' },
};

/** The simulator's merchant reference, which the worker sends (a stand-in: the simulator is not the live provider). */
export const SIMULATOR_MERCHANT_REF = 'demo-merchant';

/**
 * Every variable each app service gets, by name. Secrets only as NAME_FILE. The worker's provider
 * settings are addresses: compose takes them from its `.env` (going live is a change of settings
 * there, docs/production.md), the native topology points them at its simulator on loopback (no
 * forwarder: the simulator is on loopback already) and delivers no merchant event to a configured
 * endpoint (NODE_ENV=production refuses a loopback one; compose's is its `events` service).
 */
export const APP_ENV: Record<AppRole, Record<string, EnvSource>> = {
  worker: {
    ...temporalClient,
    MPS_BASE_URL: { address: 'providerBaseUrl' },
    MPS_SIMULATOR_UPSTREAM: { address: 'simulatorUpstream', optional: true },
    MPS_LIVE: { address: 'providerLive' },
    MPS_MERCHANT_REF: { address: 'merchantRef' },
    MPS_SECRET_KEY_FILE: { secret: 'mps_secret_key' },
    MPS_ACCESS_TOKEN_FILE: { secret: 'mps_access_token' },
    MERCHANT_WEBHOOK_URL: { address: 'merchantWebhookUrl', optional: true },
    MERCHANT_WEBHOOK_SECRET_FILE: { secret: 'merchant_webhook_secret' },
    WORKER_METRICS_ADDRESS: { address: 'workerMetricsAddress', optional: true },
  },
  gateway: {
    ...temporalClient,
    GATEWAY_PORT: { address: 'gatewayPort' },
    GATEWAY_HOST: { address: 'gatewayHost' },
    GATEWAY_PUBLIC_URL: { address: 'gatewayPublicUrl' },
    GATEWAY_NOTIFICATION_BASE_URL: { address: 'gatewayNotificationBaseUrl' },
    // Behind compose's load balancer, the client of a request is the one it forwarded for.
    GATEWAY_TRUST_PROXY: { address: 'gatewayTrustProxy', optional: true },
    GATEWAY_API_KEYS_FILE: { keyring: true },
    CODEC_AUTH_TOKEN_FILE: { secret: 'codec_auth_token' },
    CODEC_CORS_ORIGINS: { address: 'temporalWebOrigin' },
    GATEWAY_METRICS_ADDRESS: { address: 'gatewayMetricsAddress', optional: true },
  },
  simulator: {
    SIMULATOR_CHECKOUT_PUBLIC_URL: { address: 'checkoutPublicUrl' },
    SIMULATOR_NOTIFICATION_ALLOW_HOSTS: { address: 'notificationAllowHosts' },
    SIMULATOR_STATE_PATH: { address: 'simulatorStateFile' },
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
  /** The app's own certificate directory (TLS_FILES inside); required by the roles that call Temporal. */
  tlsDir?: string,
  /** The directory of the keyring (KEYRING_FILE); natively the secrets' directory. */
  keyringDir: string = secretsDir,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(APP_ENV[role])) {
    if ('value' in source) out[name] = source.value;
    else if ('secret' in source) out[name] = `${secretsDir.replace(/\/+$/, '')}/${SECRET_FILES[source.secret]}`;
    else if ('keyring' in source) out[name] = `${keyringDir.replace(/\/+$/, '')}/${KEYRING_FILE}`;
    else if ('tls' in source) {
      if (tlsDir === undefined) throw new Error(`${role}: ${name} needs the app's certificate directory`);
      out[name] = `${tlsDir.replace(/\/+$/, '')}/${TLS_FILES[source.tls]}`;
    }
    else {
      const v = addresses[source.address];
      if (v === undefined && source.optional) continue;
      if (v === undefined) throw new Error(`${role}: ${name} needs the address ${source.address}`);
      out[name] = v;
    }
  }
  return out;
}

/**
 * The worker's settings of the simulator the native topology runs (compose's defaults for them,
 * which its `.env` may change, are the same but for the address: a forwarder's, then the service).
 */
export const SIMULATOR_PROVIDER = { providerLive: '0', merchantRef: SIMULATOR_MERCHANT_REF } as const;

/**
 * compose's worker entrypoint: with MPS_SIMULATOR_UPSTREAM set, the command runs behind the
 * forwarder (src/simulator/forwarder.ts, compiled in the image), which listens on MPS_BASE_URL in
 * the container and passes on to the simulator only while its answers carry the simulator's mark;
 * without it (live), the command runs itself. Compose appends the command (`node bin/mpf.cjs worker`).
 */
export const FORWARDER_MAIN = 'dist/simulator/forwarder.js';
export const WORKER_ENTRYPOINT = [
  '/bin/sh', '-c', `if [ -n "\${MPS_SIMULATOR_UPSTREAM:-}" ]; then exec node ${FORWARDER_MAIN} "$@"; fi; exec "$@"`, 'worker',
] as const;

/** compose's `events` service: a stand-in for the merchant's backend, verifying and printing every signed event the workers deliver. */
export const EVENTS_RECEIVER = {
  port: 8787,
  command: ['node', 'bin/mpf.cjs', 'events', 'listen', '--port', '8787', '--host', '0.0.0.0'],
} as const;

/** Workers and gateways each, as `mpf cluster up` starts them unless told otherwise and compose's `deploy.replicas`. */
export const DEFAULT_REPLICAS = 2;

/** Temporal Web (compose's temporal-ui; the native ui-server's config file says the same). */
export const TEMPORAL_UI_ENV_NAMES = [
  'TEMPORAL_ADDRESS', 'TEMPORAL_CORS_ORIGINS', 'TEMPORAL_CODEC_ENDPOINT',
  'TEMPORAL_TLS_CA', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_SERVER_NAME', 'TEMPORAL_TLS_ENABLE_HOST_VERIFICATION',
] as const;

// ---- compose's switch of authorisation ---------------------------------------------------------

/**
 * compose's switch, in its `.env`, read as `mpf cluster up` reads its environment (main.ts,
 * authFromEnvironment): on unless exactly `0` (unset or empty: on, the default); `0` off
 * (certificates only: any certificate of the stack's CA may do anything, and Temporal Web has no
 * sign-in); any other value refused (`mpf cluster up` starts nothing; in compose each service of
 * AUTH_SWITCH_SERVICES stops, naming the setting). The identity provider runs either way
 * (as natively); the switch decides whether the Temporal server authorises calls, whether Temporal
 * Web signs people in, whether the admin-token job fetches the namespace job's token, and whether
 * workers and gateways fetch tokens: each of their containers' entrypoints drops the token settings
 * (the names `mpf cluster up` gives them: up.ts, clusterAuth) before the command runs when it is off.
 */
export const AUTH_SWITCH = 'MPF_CLUSTER_AUTH';
/** Its value in compose's environment of each service below: `.env`'s, and with none (or an empty one) on. */
export const AUTH_SWITCH_COMPOSE_VALUE = `\${${AUTH_SWITCH}:-1}`;
/** The services whose entrypoint (the admin-token job: docker/admin-token.ts) reads the switch; no other service gets it. */
export const AUTH_SWITCH_SERVICES = ['temporal', 'temporal-ui', 'admin-token', 'worker', 'gateway'] as const;

/** Why a value of the switch is refused (main.ts's words; the entrypoints print the same and stop). */
export function authSwitchProblem(value: string): string {
  return `${AUTH_SWITCH}: ${JSON.stringify(value)} is neither 1 (every call to Temporal authorised, the default) nor 0 (certificates only)`;
}

/** The switch as docker/admin-token.ts reads it: true on, false off; a value other than 0 or 1 throws authSwitchProblem. */
export function authSwitchOn(env: NodeJS.ProcessEnv): boolean {
  const value = env[AUTH_SWITCH];
  if (value === undefined || value === '' || value === '1') return true;
  if (value === '0') return false;
  throw new Error(authSwitchProblem(value));
}

/**
 * The switch as the entrypoints' shells read it. AUTH_SWITCH_GUARD, first in each, stops the
 * container (exit 2) with authSwitchProblem's words on stderr for any value but empty, 0 or 1;
 * AUTH_SWITCH_ON then succeeds unless the value is exactly 0. In compose's file every `$` is `$$`.
 */
export const AUTH_SWITCH_GUARD = `case "\${${AUTH_SWITCH}:-1}" in 0|1) ;; *) printf '${authSwitchProblem('%s')}\\n' "$${AUTH_SWITCH}" >&2; exit 2;; esac`;
export const AUTH_SWITCH_ON = `[ "\${${AUTH_SWITCH}:-1}" != 0 ]`;
/** What compose's Temporal server says in its log when the switch is off (`mpf cluster up` prints the like). */
export const AUTH_OFF_WARNING = `${AUTH_SWITCH}=0: the Temporal API authorises no call; any certificate of the stack's CA may terminate, cancel or reset any flow, and Temporal Web has no sign-in`;

export const OIDC_CLIENT_ENV_NAMES = ['TEMPORAL_OIDC_ISSUER', 'TEMPORAL_OIDC_CLIENT_ID', 'TEMPORAL_OIDC_CLIENT_SECRET_FILE', 'TEMPORAL_OIDC_AUDIENCE'] as const;
/** What the gateways also get with the switch: people's access tokens on their operator routes and /codec. */
export const GATEWAY_OIDC_ENV_NAMES = ['GATEWAY_OIDC_ISSUER', 'GATEWAY_OIDC_AUDIENCE'] as const;
const AUTH_SWITCH_SHELL = `${AUTH_SWITCH_GUARD}; ${AUTH_SWITCH_ON} || unset ${[...OIDC_CLIENT_ENV_NAMES, ...GATEWAY_OIDC_ENV_NAMES].join(' ')}`;
/** compose's worker and gateway entrypoints (the command is appended): the switch, then the worker's forwarder choice (WORKER_ENTRYPOINT) or the command. */
export function composeAppEntrypoint(role: 'worker' | 'gateway'): string[] {
  return ['/bin/sh', '-c', `${AUTH_SWITCH_SHELL}; ${role === 'worker' ? WORKER_ENTRYPOINT[2] : 'exec "$@"'}`, role];
}
