/**
 * Gateway overhead: POST /v1/swaps and POST /v1/swaps/{id}/pin through the gateway (HTTP, API key,
 * zod, the pin_token check against the flow's memo, fastify's serialisation) ÷ the same calls made
 * directly with the typed client (MpfClient.startSwap / submitPin) in this process. Idle
 * (sequential, interleaved pairs) and at a given concurrency (alternating rounds). A third side,
 * a gateway of its own with the previous default (`pinSlotAhead: 'start'`: the user's
 * wrong-PIN budget started beside the swap, the PIN taking its slot while the user waits), is
 * measured in the same rounds as `before`; the gateway measured reserves the slot as the swap starts.
 */
import { Agent, request } from 'undici';
import { MpfClient } from '../src/starter/client/mpf-client';
import { startGateway } from '../src/starter/gateway/main';
import { SIM_PIN, swapBody } from '../test/helpers/fixtures';
import { BENCH_API_KEY, type BenchStack } from './stack';
import { msSince, now, summarize } from './stats';

export interface PhaseSamples {
  start: number[];
  pin: number[];
}

export interface GatewayBenchResult {
  concurrency: number;
  gateway: { start: ReturnType<typeof summarize>; pin: ReturnType<typeof summarize> };
  direct: { start: ReturnType<typeof summarize>; pin: ReturnType<typeof summarize> };
  /** The gateway that starts the budget beside the swap and takes the PIN's slot on its path (pinSlotAhead 'start'). */
  before?: { start: ReturnType<typeof summarize>; pin: ReturnType<typeof summarize> };
}

/**
 * Each swap its own user, as real traffic has: the gateway takes a slot of the user's wrong-PIN
 * budget (one workflow per user) for every PIN, so one user_ref for all would measure a single
 * user sending dozens of PINs at once — the burst the budget exists to refuse.
 */
const userSwap = (txnRef: string): ReturnType<typeof swapBody> => swapBody(txnRef, { user_ref: `u-${txnRef}` });

export function gatewayDriver(
  stack: BenchStack,
  beforeUrl?: string,
): { viaGateway: (into: PhaseSamples) => Promise<void>; viaBefore: (into: PhaseSamples) => Promise<void>; direct: (into: PhaseSamples) => Promise<void>; close(): Promise<void> } {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  let seq = 0;
  const agent = new Agent({ connections: 256 });
  const post = async (path: string, body: unknown, headers: Record<string, string>, base = stack.gateway.url): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await request(`${base}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  };
  const viaGatewayAt = async (base: string, tag: string, into: PhaseSamples): Promise<void> => {
    const a = now();
    const s = await post('/v1/swaps', userSwap(`${tag}-${run}-${seq++}`), { 'x-api-key': BENCH_API_KEY }, base);
    if (s.status !== 201 && s.status !== 200) throw new Error(`POST /v1/swaps answered ${s.status}: ${JSON.stringify(s.json)}`);
    if (s.json.state !== 'awaiting_pin') throw new Error(`gateway swap is ${String(s.json.state)}`);
    into.start.push(msSince(a));
    const b = now();
    const p = await post(`/v1/swaps/${String(s.json.swap_id)}/pin`, { wallet_pin: SIM_PIN }, { authorization: `Bearer ${String(s.json.pin_token)}` }, base);
    if (p.json.outcome !== 'confirmed') throw new Error(`gateway PIN answered ${p.status}: ${JSON.stringify(p.json)}`);
    into.pin.push(msSince(b));
  };
  return {
    viaGateway: (into) => viaGatewayAt(stack.gateway.url, 'gw', into),
    viaBefore: (into) => viaGatewayAt(beforeUrl ?? stack.gateway.url, 'gb', into),
    async direct(into) {
      const a = now();
      const s = await stack.mpf.startSwap(userSwap(`gd-${run}-${seq++}`));
      if (s.swap.state !== 'awaiting_pin') throw new Error(`direct swap is ${s.swap.state}`);
      into.start.push(msSince(a));
      const b = now();
      const o = await stack.mpf.submitPin(s.swap.swap_id, { wallet_pin: SIM_PIN });
      if (o?.outcome !== 'confirmed') throw new Error(`direct PIN outcome ${o?.outcome}`);
      into.pin.push(msSince(b));
    },
    close: () => agent.close(),
  };
}

/**
 * `rounds` alternating rounds of `perRound` swaps each side at `concurrency` lanes (1 = idle,
 * sequential), B/S order alternating.
 */
export async function benchGateway(stack: BenchStack, opts: { concurrency: number; rounds: number; perRound: number; warmup: number }): Promise<GatewayBenchResult> {
  // The before side: a gateway of its own (its own client, as going-live's) that starts the budget
  // beside the swap and takes the PIN's slot on the PIN's path.
  const mpf = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: 'http://127.0.0.1:9' });
  const beforeGw = await startGateway({ mpf, apiKey: BENCH_API_KEY, port: 0, logger: false, pinSlotAhead: 'start' });
  const d = gatewayDriver(stack, beforeGw.url);
  try {
    const scratch: PhaseSamples = { start: [], pin: [] };
    for (let i = 0; i < opts.warmup; i++) {
      await d.viaGateway(scratch);
      await d.viaBefore(scratch);
      await d.direct(scratch);
    }
    const gw: PhaseSamples = { start: [], pin: [] };
    const before: PhaseSamples = { start: [], pin: [] };
    const direct: PhaseSamples = { start: [], pin: [] };
    const round = async (fn: (into: PhaseSamples) => Promise<void>, into: PhaseSamples): Promise<void> => {
      let left = opts.perRound;
      const lane = async (): Promise<void> => {
        while (left-- > 0) await fn(into);
      };
      await Promise.all(Array.from({ length: opts.concurrency }, lane));
    };
    const sides: [(into: PhaseSamples) => Promise<void>, PhaseSamples][] = [
      [d.viaGateway, gw],
      [d.direct, direct],
      [d.viaBefore, before],
    ];
    for (let r = 0; r < opts.rounds; r++) {
      // The order rotates from round to round, so that no side always follows the same one.
      for (let i = 0; i < sides.length; i++) {
        const [fn, into] = sides[(i + r) % sides.length]!;
        await round(fn, into);
      }
    }
    return {
      concurrency: opts.concurrency,
      gateway: { start: summarize(gw.start), pin: summarize(gw.pin) },
      direct: { start: summarize(direct.start), pin: summarize(direct.pin) },
      before: { start: summarize(before.start), pin: summarize(before.pin) },
    };
  } finally {
    await d.close();
    await beforeGw.close();
  }
}
