/**
 * Gateway overhead: POST /v1/swaps and POST /v1/swaps/{id}/pin through the gateway (HTTP, API key,
 * zod, the pin_token check against the flow's memo, fastify's serialisation) ÷ the same calls made
 * directly with the typed client (MpfClient.startSwap / submitPin) in this process. Idle
 * (sequential, interleaved pairs) and at a given concurrency (alternating rounds).
 */
import { Agent, request } from 'undici';
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
}

/**
 * Each swap its own user, as real traffic has: the gateway takes a slot of the user's wrong-PIN
 * budget (one workflow per user) for every PIN, so one user_ref for all would measure a single
 * user sending dozens of PINs at once — the burst the budget exists to refuse.
 */
const userSwap = (txnRef: string): ReturnType<typeof swapBody> => swapBody(txnRef, { user_ref: `u-${txnRef}` });

export function gatewayDriver(stack: BenchStack): { viaGateway: (into: PhaseSamples) => Promise<void>; direct: (into: PhaseSamples) => Promise<void>; close(): Promise<void> } {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  let seq = 0;
  const agent = new Agent({ connections: 256 });
  const post = async (path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await request(`${stack.gateway.url}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  };
  return {
    async viaGateway(into) {
      const a = now();
      const s = await post('/v1/swaps', userSwap(`gw-${run}-${seq++}`), { 'x-api-key': BENCH_API_KEY });
      if (s.status !== 201 && s.status !== 200) throw new Error(`POST /v1/swaps answered ${s.status}: ${JSON.stringify(s.json)}`);
      if (s.json.state !== 'awaiting_pin') throw new Error(`gateway swap is ${String(s.json.state)}`);
      into.start.push(msSince(a));
      const b = now();
      const p = await post(`/v1/swaps/${String(s.json.swap_id)}/pin`, { wallet_pin: SIM_PIN }, { authorization: `Bearer ${String(s.json.pin_token)}` });
      if (p.json.outcome !== 'confirmed') throw new Error(`gateway PIN answered ${p.status}: ${JSON.stringify(p.json)}`);
      into.pin.push(msSince(b));
    },
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
  const d = gatewayDriver(stack);
  try {
    const scratch: PhaseSamples = { start: [], pin: [] };
    for (let i = 0; i < opts.warmup; i++) {
      await d.viaGateway(scratch);
      await d.direct(scratch);
    }
    const gw: PhaseSamples = { start: [], pin: [] };
    const direct: PhaseSamples = { start: [], pin: [] };
    const round = async (fn: (into: PhaseSamples) => Promise<void>, into: PhaseSamples): Promise<void> => {
      let left = opts.perRound;
      const lane = async (): Promise<void> => {
        while (left-- > 0) await fn(into);
      };
      await Promise.all(Array.from({ length: opts.concurrency }, lane));
    };
    for (let r = 0; r < opts.rounds; r++) {
      if (r % 2 === 0) {
        await round(d.viaGateway, gw);
        await round(d.direct, direct);
      } else {
        await round(d.direct, direct);
        await round(d.viaGateway, gw);
      }
    }
    return {
      concurrency: opts.concurrency,
      gateway: { start: summarize(gw.start), pin: summarize(gw.pin) },
      direct: { start: summarize(direct.start), pin: summarize(direct.pin) },
    };
  } finally {
    await d.close();
  }
}
