/**
 * The provider guard's view, defined once: the zod schemas of what the guard answers (its memo,
 * the pause and resume updates, GET /v1/admin/provider, `mpf provider status`), from which the
 * TypeScript types are inferred. contract/provider-guard.ts (workflow-safe) imports only the types
 * from here, so the workflow bundle carries no zod; the gateway's route answers with GuardViewSchema.
 */
import { z } from 'zod';

/** The classes of money-moving calls a breaker holds (contract/provider-guard.ts MONEY_CLASSES lists them too). */
export const MoneyClassSchema = z.enum(['initiate', 'confirm', 'create']);
export type MoneyClass = z.infer<typeof MoneyClassSchema>;

export const BreakerStateSchema = z.enum(['closed', 'open', 'half_open']);
export type BreakerState = z.infer<typeof BreakerStateSchema>;

/** When a breaker opens, and for how long (PROVIDER_BREAKER_* in the configuration; the defaults: DEFAULT_BREAKER). */
export const BreakerSettingsSchema = z.object({
  window_ms: z.number().describe('the window outcomes are counted in'),
  ambiguous_count: z.number().describe('opens at this many ambiguous outcomes of one class in the window'),
  ambiguous_share: z.number().describe('…or at this share of ambiguous outcomes, once the class made at least min_calls calls in the window'),
  min_calls: z.number(),
  throttled_count: z.number().describe('opens at this many 429 answers of one class in the window'),
  cooldown_ms: z.number().describe('how long it stays open before the probe'),
  slow_ms: z.number().describe('a money-moving call unanswered this long counts as ambiguous then'),
});
export type BreakerSettings = z.infer<typeof BreakerSettingsSchema>;

export const ClassStateSchema = z.object({
  state: BreakerStateSchema,
  since: z.string().describe('when it entered this state (ISO 8601)'),
  reason: z.string().optional().describe('why it opened (counts in the window)'),
  probe_at: z.string().optional().describe('while open: when the categories GET probes the provider'),
  trial: z
    .object({ since: z.string(), key: z.string().optional(), claimed_at: z.string().optional(), until: z.string().optional() })
    .optional()
    .describe(
      'while half-open, once the categories GET succeeded: the one real call let through (key: the flow that claimed it, absent: not claimed yet; ' +
        'until: when an unanswered trial counts as failed); its answer closes or re-opens the breaker',
    ),
});
export type ClassState = z.infer<typeof ClassStateSchema>;

export const GuardPauseSchema = z.object({
  by: z.string().describe("the identity that paused: an API key's id (and label), a person, or the CLI's operator"),
  at: z.string(),
  reason: z.string(),
});
export type GuardPause = z.infer<typeof GuardPauseSchema>;

export const GuardViewSchema = z
  .object({
    paused: GuardPauseSchema.optional().describe('present while money-moving calls are paused'),
    breakers: z.object({ initiate: ClassStateSchema, confirm: ClassStateSchema, create: ClassStateSchema }),
    settings: BreakerSettingsSchema,
    audit: z
      .array(z.object({ action: z.enum(['pause', 'resume']), by: z.string(), at: z.string(), reason: z.string().optional() }))
      .describe('the last operator actions (pause / resume), newest last, at most 20'),
    events: z
      .array(z.object({ id: z.string(), type: z.string(), timestamp: z.string() }))
      .optional()
      .describe("the guard's last merchant events (provider.breaker_opened, …), newest last"),
  })
  .meta({ id: 'ProviderGuard' });
export type GuardView = z.infer<typeof GuardViewSchema>;
