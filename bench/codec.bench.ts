/**
 * Payload codec cost: the full client/worker payload path with our AES-256-GCM codec
 * (JSON payload converter → AesGcmCodec.encode → AesGcmCodec.decode → converter) against the
 * default JSON payload converter alone, on a typical SwapView and on the category list (the
 * largest activity result). Batches of operations, subject and baseline interleaved.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../src/codec/aes-gcm-codec';
import { generateDevKeys } from '../src/codec/keys';
import { CATEGORIES } from '../src/simulator';
import type { SwapView } from '../src/workflows/messages';
import { type BenchSection, row } from './report';
import { pairedSamples, summarize } from './stats';

/** A confirmed swap as the state query / update results carry it, with one notification recorded. */
export function typicalSwapView(): SwapView {
  return {
    swap_id: 'swap-bench-7f3a9c2e1d',
    state: 'confirmed',
    txn_ref: 'bench-7f3a9c2e1d',
    user_ref: 'user-0001',
    payment_ref: 'MPS-SWP-20250101-000123456',
    from_currency: 'USD',
    to_currency: 'NGN',
    amount: 250.75,
    converted_amount: 386_155.0,
    rate_used: 1540.0,
    expires_in_seconds: 300,
    expires_at: '2025-01-01T12:04:55.000Z',
    pin_attempts_used: 1,
    pin_attempts_left: 2,
    provider_message: 'Swap confirmed successfully',
    notifications: [
      {
        dedup_key: 'id:ntf-000123456',
        received_at: '2025-01-01T12:00:07.123Z',
        outcome: 'paid',
        applied: false,
        deliveries: 1,
        payload: {
          event: 'swap.completed',
          data: { notification_id: 'ntf-000123456', payment_ref: 'MPS-SWP-20250101-000123456', status: 'successful', amount: 250.75 },
        },
      },
    ],
    updated_at: '2025-01-01T12:00:07.200Z',
  };
}

export interface CodecBenchOptions {
  batch: number;
  batches: number;
  warmupBatches: number;
  budgetMs: number;
}

export async function benchCodec(opts: CodecBenchOptions): Promise<BenchSection> {
  const codec = new AesGcmCodec(generateDevKeys());
  const pc = defaultPayloadConverter;
  const cases: [string, unknown][] = [
    ['SwapView', typicalSwapView()],
    ['category list', CATEGORIES.map((c) => ({ code: c.code, name: c.name }))],
  ];
  const rows = [];
  const info: Record<string, unknown> = {};
  for (const [label, value] of cases) {
    const plain = pc.toPayload(value);
    const [sealed] = await codec.encode([plain]);
    // Correctness first: the round trip gives the value back.
    const back = pc.fromPayload((await codec.decode([sealed]))[0]);
    if (JSON.stringify(back) !== JSON.stringify(value)) throw new Error(`codec round trip changed the ${label}`);

    const withCodec = async (): Promise<void> => {
      for (let i = 0; i < opts.batch; i++) {
        const enc = await codec.encode([pc.toPayload(value)]);
        pc.fromPayload((await codec.decode(enc))[0]);
      }
    };
    const converterOnly = async (): Promise<void> => {
      for (let i = 0; i < opts.batch; i++) {
        const enc = [pc.toPayload(value)];
        pc.fromPayload((await Promise.resolve(enc))[0]);
      }
    };
    const s = await pairedSamples(withCodec, converterOnly, {
      warmup: opts.warmupBatches,
      iterations: opts.batches,
      budgetMs: opts.budgetMs,
    });
    const perOpUs = (ms: number[]): number[] => ms.map((x) => (x * 1000) / opts.batch);
    const subj = summarize(perOpUs(s.subject));
    const base = summarize(perOpUs(s.baseline));
    const bench = `codec: ${label}`;
    const n = s.subject.length * opts.batch;
    rows.push(
      row(bench, 'round trip ops/s (median batch)', 1e6 / subj.median, 1e6 / base.median, n),
      row(bench, 'median µs per round trip', subj.median, base.median, n),
      row(bench, 'p95 µs per round trip (batch)', subj.p95, base.p95, n),
    );
    info[label] = { jsonBytes: plain.data?.length ?? 0, encryptedBytes: sealed.data?.length ?? 0, batch: opts.batch, truncated: s.truncated };
  }
  return {
    name: 'codec',
    subjectLabel: 'JSON converter + AesGcmCodec encode+decode',
    baselineLabel: 'default JSON payload converter alone',
    rows,
    info,
  };
}
