/**
 * The production path loads no fake and no worker runtime, src/ stands on floors (every import
 * points down; in src/starter cli -> demo -> gateway -> client) with the tools of tools/ above it
 * (src/ imports none of them), and src/ and tools/ have no import circle.
 * The lint rules check the static imports; this checks what actually loads (a fresh node process
 * each) and, with madge, every dependency: type imports and the CLI's lazy requires included.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

interface Loaded {
  total: number;
  simulator: number;
  worker: number;
  [group: string]: number;
}

/**
 * Runs `code` in a fresh `node --import tsx` process in the repository and counts the modules in
 * require.cache: src/simulator, @temporalio/worker, and each extra group (a path fragment).
 */
function modulesLoadedBy(code: string, groups: Record<string, string> = {}): Loaded {
  const all = { simulator: '/src/simulator/', worker: '/node_modules/@temporalio/worker/', ...groups };
  const script = `${code};
    const keys = Object.keys(require.cache);
    const groups = ${JSON.stringify(all)};
    const counts = { total: keys.length };
    for (const [name, fragment] of Object.entries(groups)) counts[name] = keys.filter((k) => k.includes(fragment)).length;
    process.stdout.write(JSON.stringify(counts));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as Loaded;
}

describe('the production path', () => {
  test('requiring the gateway (what `mpf gateway` runs) loads 0 simulator and 0 @temporalio/worker modules', (t) => {
    const loaded = modulesLoadedBy("require('./src/starter/gateway/main')", { gateway: '/src/starter/gateway/', fastify: '/node_modules/fastify/' });
    t.diagnostic(`gateway/main: ${loaded.total} modules, ${loaded.simulator} from src/simulator, ${loaded.worker} from @temporalio/worker`);
    assert.ok(loaded.gateway >= 10 && loaded.fastify > 0, `the gateway itself was loaded: ${JSON.stringify(loaded)}`);
    assert.equal(loaded.simulator, 0, 'simulator modules loaded by the gateway');
    assert.equal(loaded.worker, 0, '@temporalio/worker modules loaded by the gateway');
  });

  test('the typed client library loads no simulator, no worker runtime and no face', (t) => {
    const loaded = modulesLoadedBy("require('./src/starter/client/from-env')", {
      faces: '/src/starter/gateway/',
      cli: '/src/starter/cli/',
      demo: '/src/starter/demo/',
    });
    t.diagnostic(`client/from-env: ${loaded.total} modules, ${loaded.simulator} from src/simulator, ${loaded.worker} from @temporalio/worker`);
    assert.deepEqual([loaded.simulator, loaded.worker, loaded.faces, loaded.cli, loaded.demo], [0, 0, 0, 0, 0], JSON.stringify(loaded));
  });

  test('building the `mpf` program loads no server, no demo and no Temporal client (each command loads its own when it runs)', (t) => {
    const loaded = modulesLoadedBy("require('./src/starter/cli/program').buildProgram()", {
      gateway: '/src/starter/gateway/',
      demo: '/src/starter/demo/',
      temporalClient: '/node_modules/@temporalio/client/',
      workerMain: '/src/worker',
    });
    t.diagnostic(`cli/program: ${loaded.total} modules, ${loaded.simulator} from src/simulator, ${loaded.worker} from @temporalio/worker`);
    assert.deepEqual(
      [loaded.simulator, loaded.worker, loaded.gateway, loaded.demo, loaded.temporalClient, loaded.workerMain],
      [0, 0, 0, 0, 0, 0],
      JSON.stringify(loaded),
    );
  });
});

/**
 * The floors of src/, ground first, and the tools above it. A room is a folder of src/ (each of
 * the four rooms of src/starter counts as one) or a file at its root, or a folder of tools/; a room
 * imports only rooms on floors below its own, never one beside it or above. The tools stand on
 * src/ and nothing in src/ stands on them (`mpf cluster` requires the launcher by a computed path,
 * only in a source checkout). A new room gets a floor here.
 */
const FLOORS: readonly (readonly string[])[] = [
  // http-client imports nothing of src (lint): the light client package every face may use.
  ['contract', 'auth', 'http-client'],
  // config stands on the contract (the provider guard's thresholds are its BreakerSettings, in part).
  ['config'],
  ['provider', 'codec', 'simulator', 'merchant-events'],
  ['observability'],
  ['activities'],
  ['workflows'],
  ['temporal'],
  ['metrics'],
  ['worker.ts'],
  ['worker-main.ts'],
  ['starter/client'],
  // The console: a plugin the gateway registers; it calls the API through the gateway's app, never a client.
  ['starter/console'],
  ['starter/gateway'],
  ['starter/demo'],
  ['starter/cli'],
  ['index.ts'],
  ['tools/cluster'],
];
const FLOOR_OF = new Map(FLOORS.flatMap((rooms, floor) => rooms.map((room) => [room, floor] as const)));

/** The room of a file: of src/ by its path relative to src/, of tools/ by its path from the root (as `named` gives them). */
function roomOf(file: string): string {
  return /^(tools\/[^/]+|starter\/[^/]+|[^/]+)/.exec(file)![1]!;
}

/** Names a madge graph of the repository's root as the rooms read it: src/ files relative to src/. */
function named(graph: Record<string, string[]>): Record<string, string[]> {
  const name = (file: string): string => file.replace(/^src\//, '');
  return Object.fromEntries(Object.entries(graph).map(([from, deps]) => [name(from), deps.map(name)]));
}

/** The imports of `graph` (file -> files it imports) that stay level or climb, one line each. */
function climbsIn(graph: Record<string, string[]>): string[] {
  const climbs: string[] = [];
  for (const [from, deps] of Object.entries(graph)) {
    for (const to of deps) {
      const [a, b] = [roomOf(from), roomOf(to)];
      const [fa, fb] = [FLOOR_OF.get(a), FLOOR_OF.get(b)];
      if (a !== b && fa !== undefined && fb !== undefined && fb >= fa) climbs.push(`${from} -> ${to} (${a} on floor ${fa} may not import ${b} on floor ${fb})`);
    }
  }
  return climbs;
}

describe('the import graph of src and tools (madge: static imports, type imports and lazy requires)', () => {
  interface MadgeResult {
    obj(): Record<string, string[]>;
    circular(): string[][];
    warnings(): { skipped: string[] };
  }
  // madge ships no type declarations.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const madge = require('madge') as (roots: string | string[], config: object) => Promise<MadgeResult>;
  const graph = madge([path.join(ROOT, 'src'), path.join(ROOT, 'tools')], { baseDir: ROOT, fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json') });
  const files = async (): Promise<Record<string, string[]>> => named((await graph).obj());

  test('has no circle', async (t) => {
    const g = await graph;
    const circles = g.circular();
    t.diagnostic(`madge: ${Object.keys(g.obj()).length} files, ${circles.length} circular dependencies`);
    assert.deepEqual(circles, []);
    assert.deepEqual(g.warnings().skipped, [], 'every import was resolved');
  });

  test('stands on floors: every import points down, none beside or up (FLOORS)', async (t) => {
    const all = await files();
    assert.ok(Object.keys(all).length > 50, 'madge read the tree');
    // Every room has a floor and every floor's rooms are there (a renamed room would make the check vacuous).
    const rooms = new Set(Object.keys(all).map(roomOf));
    assert.deepEqual([...rooms].filter((r) => !FLOOR_OF.has(r)), [], 'a room of src/ or tools/ with no floor: give it one in FLOORS');
    assert.deepEqual([...FLOOR_OF.keys()].filter((r) => !rooms.has(r)), [], 'a room in FLOORS that src/ and tools/ no longer have: take it out');
    t.diagnostic(`${rooms.size} rooms on ${FLOORS.length} floors`);
    assert.deepEqual(climbsIn(all), []);
  });

  test('the floor check fails on an import that climbs or stays level', () => {
    assert.equal(climbsIn({ 'contract/merchant-events.ts': ['workflows/flow-ids.ts'] }).length, 1);
    assert.equal(climbsIn({ 'auth/keyring.ts': ['contract/flow-kinds.ts'] }).length, 1, 'beside, on the same floor');
    assert.equal(climbsIn({ 'starter/client/flows.ts': ['starter/gateway/app.ts'] }).length, 1);
    assert.equal(climbsIn({ 'starter/cli/commands/cluster.ts': ['tools/cluster/main.ts'] }).length, 1, 'src/ importing a tool');
    assert.deepEqual(climbsIn({ 'starter/cli/main.ts': ['starter/client/flows.ts', 'workflows/flow-ids.ts'], 'activities/x.ts': ['activities/y.ts'] }), []);
    assert.deepEqual(climbsIn({ 'tools/cluster/up.ts': ['tools/cluster/apps.ts', 'temporal/provision.ts', 'starter/cli/program.ts'] }), [], 'a tool stands on all of src/');
  });

  test('provider/, client/ and gateway/ reach no simulator or worker', async () => {
    const production = (file: string): boolean => /^(provider|starter\/(client|gateway))\//.test(file);
    const wrong: string[] = [];
    for (const [from, deps] of Object.entries(await files())) {
      for (const to of deps) {
        if (production(from) && /^(simulator\/|worker(-main)?\.ts$)/.test(to)) wrong.push(`${from} -> ${to} (the production path loads no simulator or worker)`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
