/**
 * Injected faults, seeded and reproducible. A rule applies to one endpoint key (or '*'), fires
 * with `probability` (default 1) at most `times` times. For each request, every matching
 * 'latency' rule that fires adds its delay; the first other rule that fires decides the fault.
 * The fault stream is re-seeded from the simulator's seed whenever the rules are replaced or the
 * simulator is reset, so the same seed, rules and request order give the same faults.
 *
 * Kinds: latency, status5xx, rate_limit, garbage, html_error (answer without committing unless
 * `commit: true`), reset (destroy the socket, nothing committed), apply_then_fail (commit, then
 * destroy the socket: the ambiguous case), hang (commit nothing, never answer; the socket is
 * destroyed after `maxMs`, at most 60 s).
 * Faults are decided when a request reaches its endpoint, before authentication and validation
 * (like a proxy in front of the provider), so an unauthorized request also counts towards `times`.
 * A rule with `ref` applies only to the requests of that transaction (the txn_ref or
 * txn_merchant_ref of the body, or the swap its auth_token belongs to): a tool can fail one flow
 * while others go on. `setScoped(ref, …)` replaces one transaction's rules and leaves every other
 * rule as it was (its count of firings, the fault stream of other transactions).
 */
import { z } from 'zod';
import { Prng } from './prng';
import type { EndpointKey } from './ledger';

export const HANG_CAP_MS = 60_000;

const base = {
  endpoint: z.enum(['swap.init', 'swap.confirm', 'link.create', 'categories', '*']),
  probability: z.number().min(0).max(1).default(1),
  times: z.number().int().min(1).optional(),
  ref: z.string().min(1).max(100).optional(),
};
const commit = z.boolean().default(false);

export const FaultRule = z.discriminatedUnion('kind', [
  z.object({
    ...base,
    kind: z.literal('latency'),
    latencyMs: z
      .tuple([z.number().int().min(0).max(HANG_CAP_MS), z.number().int().min(0).max(HANG_CAP_MS)])
      .refine(([a, b]) => a <= b, 'min must not exceed max'),
  }),
  z.object({
    ...base,
    kind: z.literal('status5xx'),
    status: z.number().int().min(500).max(599).default(503),
    body: z.enum(['json', 'html']).default('json'),
    commit,
  }),
  z.object({ ...base, kind: z.literal('rate_limit'), retryAfterSeconds: z.number().int().min(0).max(3600).default(1), commit }),
  z.object({ ...base, kind: z.literal('reset') }),
  z.object({ ...base, kind: z.literal('garbage'), body: z.string().max(10_000).optional(), commit }),
  z.object({ ...base, kind: z.literal('html_error'), status: z.number().int().min(400).max(599).default(502), commit }),
  z.object({ ...base, kind: z.literal('apply_then_fail') }),
  z.object({ ...base, kind: z.literal('hang'), maxMs: z.number().int().min(0).max(HANG_CAP_MS).default(HANG_CAP_MS) }),
]);
export type FaultRule = z.infer<typeof FaultRule>;
export type FaultRuleInput = z.input<typeof FaultRule>;
export type FaultKind = FaultRule['kind'];

export const NotificationFaults = z
  .object({
    duplicate: z.number().int().min(0).max(20).optional(),
    reorder: z.boolean().optional(),
    delayMs: z.number().int().min(0).max(600_000).optional(),
  })
  .strict();
export type NotificationFaults = z.infer<typeof NotificationFaults>;

export const FaultSet = z.object({
  rules: z.array(FaultRule).max(100).default([]),
  notifications: NotificationFaults.optional(),
});
export type FaultSet = z.infer<typeof FaultSet>;
export type FaultSetInput = z.input<typeof FaultSet>;

/** The rules of one transaction (PUT /_sim/faults/refs/{ref}): the path names the ref. */
export const ScopedFaultSet = z.object({ rules: z.array(FaultRule).max(20) }).strict();

export interface FaultPlan {
  delayMs: number;
  fault?: Exclude<FaultRule, { kind: 'latency' }>;
}

export class FaultEngine {
  private rules: { rule: FaultRule; used: number }[] = [];
  private notifications: NotificationFaults = {};
  private prng: Prng;

  constructor(private readonly seed: number) {
    this.prng = new Prng(seed, 'faults');
  }

  set(faults: FaultSet): void {
    this.rules = faults.rules.map((rule) => ({ rule, used: 0 }));
    this.notifications = { ...(faults.notifications ?? {}) };
    this.prng = new Prng(this.seed, 'faults');
  }

  clear(): void {
    this.set({ rules: [] });
  }

  /** Replaces the rules scoped to `ref` (each gets that ref), after the others; none removes them. */
  setScoped(ref: string, rules: FaultRule[]): void {
    this.rules = [...this.rules.filter((r) => r.rule.ref !== ref), ...rules.map((rule) => ({ rule: { ...rule, ref }, used: 0 }))];
  }

  notificationFaults(): NotificationFaults {
    return this.notifications;
  }

  /** The current rules and how often each has fired. */
  describe(): { rules: (FaultRule & { fired: number })[]; notifications: NotificationFaults } {
    return { rules: this.rules.map((r) => ({ ...r.rule, fired: r.used })), notifications: this.notifications };
  }

  /** Decides, for one request to `endpoint` (of transaction `ref`), the added delay and the fault (if any). */
  plan(endpoint: EndpointKey, ref?: string): FaultPlan {
    const plan: FaultPlan = { delayMs: 0 };
    for (const r of this.rules) {
      const { rule } = r;
      if (rule.endpoint !== '*' && rule.endpoint !== endpoint) continue;
      if (rule.ref !== undefined && rule.ref !== ref) continue;
      if (rule.times !== undefined && r.used >= rule.times) continue;
      if (rule.kind !== 'latency' && plan.fault) continue;
      if (this.prng.float() >= rule.probability) continue;
      r.used++;
      if (rule.kind === 'latency') plan.delayMs += this.prng.int(rule.latencyMs[0], rule.latencyMs[1]);
      else plan.fault = rule;
    }
    return plan;
  }
}
