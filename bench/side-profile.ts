/**
 * `npx tsx bench/side-profile.ts --family swap --side ours [--concurrency 10] [--seconds 15] [--profile-out F.cpuprofile]`: one
 * side of the load curve alone (ours, the same-shape control or the equal-work control) on a
 * stack of its own (dev server, simulator in its own process), with the main thread of this
 * process profiled by V8's sampling profiler (node:inspector) during the step only. Prints CPU ms
 * per flow of this process, of its main thread (/proc, the thread whose id is the pid) and of the
 * Temporal server, and the main thread's self time per flow by where the code lives (our rooms of
 * src/, the controls, the libraries; a native call or Node's own module counts for the script that
 * called it). The profile samples wall time while the thread is busy, so on a loaded machine its
 * milliseconds exceed the thread's CPU: read its rows as shares. A rough map of where our extra CPU goes: run it
 * for ours and for `equal` and compare the rows. The profiler slows the main thread (its figures
 * are larger than the curve's); the workflow threads and the SDK's core are in "other threads".
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { runStep } from './curve';
import { type Family, flowRunner, type Side } from './flows';
import { procCpuMs, threadCpuMsByName } from './proc';
import { startBenchStack } from './stack';

Runtime.install({ logger: new DefaultLogger('WARN') });

/** Our code by room of src/ (src/starter by its sub-room), e.g. `ours: src/provider`. */
const ourRoom = (url: string): string | undefined => {
  const m = /\/src\/(starter\/[^/]+|[^/]+)/.exec(url.replace(/^file:\/\//, ''));
  return m && !url.includes('/node_modules/') ? `ours: src/${m[1]!.replace(/\.[cm]?[jt]s$/, '')}` : undefined;
};

/** Where a profile node's code lives, from its script URL (first match wins; our code by ourRoom). */
const WHERE: [string, RegExp][] = [
  ['equal-work control (bench/control/equal-work-*)', /\/bench\/control\/equal-work/],
  ['same-shape control (bench/control)', /\/bench\/control\//],
  ['bench driver (bench/)', /\/bench\//],
  ['zod', /\/node_modules\/zod\//],
  ['undici', /\/node_modules\/undici\//],
  ['fastify and its plugins', /\/node_modules\/(@fastify|fastify|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse|fastify-type-provider-zod)/],
  ['pino (logs)', /\/node_modules\/(pino|sonic-boom|thread-stream)/],
  ['OpenTelemetry and prom-client', /\/node_modules\/(@opentelemetry|prom-client)/],
  ['Temporal SDK (JS side, gRPC and protobuf included)', /\/node_modules\/(@temporalio|@grpc|protobufjs|@protobufjs|long)\//],
];

/** Node's own modules: their time counts for the script that called them. */
const NODE_INTERNAL = /^node:|^internal\//;

/** Any other library by its package name. */
const library = (url: string): string | undefined => {
  const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  return m ? `library: ${m[1]}` : undefined;
};

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** V8's own entries, kept as they are; every other node is charged to its nearest caller outside Node's modules. */
const V8_ENTRIES = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Self time (ms) by where the code lives; native calls and Node's modules count for the script that called them. */
function selfTimeByWhere(p: Profile): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const whereOf = (id: number): string => {
    const own = byId.get(id)!.callFrame.functionName;
    if (V8_ENTRIES.has(own)) return own;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)!.callFrame.url;
      if (url && !NODE_INTERNAL.test(url)) return WHERE.find(([, re]) => re.test(url))?.[0] ?? ourRoom(url) ?? library(url) ?? 'other scripts';
    }
    return "Node.js's event loop (no script caller)";
  };
  const out = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const where = whereOf(id);
    out.set(where, (out.get(where) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  });
  out.delete('(idle)');
  return out;
}

/** The server's requests so far by operation (Prometheus `service_requests`, summed over its other labels); empty without metrics. */
async function serverRequests(metricsUrl: string | undefined): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!metricsUrl) return out;
  const text = await (await fetch(metricsUrl)).text();
  for (const m of text.matchAll(/^service_requests\{([^}]*)\} ([0-9.e+]+)$/gm)) {
    const op = /operation="([^"]+)"/.exec(m[1]!)?.[1] ?? '?';
    out.set(op, (out.get(op) ?? 0) + Number(m[2]));
  }
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { family: { type: 'string', default: 'swap' }, side: { type: 'string', default: 'ours' }, concurrency: { type: 'string', default: '10' }, seconds: { type: 'string', default: '15' }, 'profile-out': { type: 'string' } } });
  const family = values.family as Family;
  const side = values.side as Side;
  if (!['swap', 'link'].includes(family) || !['ours', 'control', 'equal'].includes(side)) throw new Error('--family swap|link, --side ours|control|equal');
  const c = Number(values.concurrency);
  const stack = await startBenchStack({ simulatorProcess: true });
  try {
    const run = flowRunner(stack, family, side);
    for (let i = 0; i < 10; i++) await run();
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    const cpu = () => ({ node: procCpuMs(process.pid), main: procCpuMs(process.pid, false, process.pid), server: procCpuMs(stack.server?.pid) });
    const before = cpu();
    const requestsBefore = await serverRequests(stack.server?.metricsUrl);
    const threadsBefore = threadCpuMsByName(process.pid);
    await session.post('Profiler.start');
    const step = await runStep(run, c, { warmMs: 0, windowMs: Number(values.seconds) * 1000, minFlows: 2 * c, maxWindowMs: 3 * Number(values.seconds) * 1000 });
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    const after = cpu();
    if (values['profile-out']) fs.writeFileSync(values['profile-out'], JSON.stringify(profile));
    const requestsAfter = await serverRequests(stack.server?.metricsUrl);
    const threadsAfter = threadCpuMsByName(process.pid);
    session.disconnect();
    const flows = step.toOutcome.n;
    const per = (k: 'node' | 'main' | 'server'): string => ((after[k] - before[k]) / flows).toFixed(1);
    console.log(`${family} ${side} c=${c}: ${flows} flows, ${step.flowsPerSec.toFixed(1)} flows/s, ${step.errors} errors${step.firstError ? ` (${step.firstError})` : ''}`);
    console.log(`CPU ms per flow: process ${per('node')} (main thread ${per('main')}, other threads ${((after.node - after.main - before.node + before.main) / flows).toFixed(1)}), Temporal server ${per('server')}`);
    const rows = [...selfTimeByWhere(profile)].sort((a, b) => b[1] - a[1]);
    console.log(`\n| main thread (profiled, idle left out), self time by where the code lives | ms per flow |\n|---|---:|\n| all | ${(rows.reduce((a, [, ms]) => a + ms, 0) / flows).toFixed(2)} |`);
    for (const [where, ms] of rows) if (ms / flows >= 0.05) console.log(`| ${where} | ${(ms / flows).toFixed(2)} |`);
    console.log(`\n| this process: CPU ms per flow by thread name (/proc; threads that ended in the step are left out) | ms per flow |\n|---|---:|`);
    for (const [name, ms] of [...threadsAfter].map(([k, v]) => [k, (v - (threadsBefore.get(k) ?? 0)) / flows] as const).sort((a, b) => b[1] - a[1])) if (ms >= 0.05) console.log(`| ${name} | ${ms.toFixed(2)} |`);
    const requests = [...requestsAfter].map(([op, n]) => [op, (n - (requestsBefore.get(op) ?? 0)) / flows] as const).filter(([, n]) => n >= 0.05);
    console.log(`\n| Temporal server: requests per flow, by operation (its service_requests metric) | per flow |\n|---|---:|`);
    for (const [op, n] of requests.sort((a, b) => b[1] - a[1])) console.log(`| ${op} | ${n.toFixed(2)} |`);
  } finally {
    await stack.stop();
  }
}

main().then(
  () => setTimeout(() => process.exit(0), 1_000).unref(),
  (err: unknown) => {
    console.error('side-profile failed:', err);
    process.exit(1);
  },
);
