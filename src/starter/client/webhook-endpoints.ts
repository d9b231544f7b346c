/**
 * The deployment's webhook endpoints (`/v1/webhook_endpoints`, `mpf webhooks`), kept in Temporal
 * as one keyed record per task queue (workflows/webhook-endpoints.ts): created, listed, changed,
 * disabled and enabled, deleted, and their secret rolled. Every delivery reads the record when it
 * is sent, so a change reaches the events of flows already running.
 *
 *  - Each endpoint has its own `whsec_` secret, generated here with node:crypto, answered once (by
 *    the create and by a roll) and never again: the views read back hold none. In Temporal it only
 *    travels in payloads (update arguments, the record's arguments, the workers' query answers),
 *    which the payload codec encrypts; never in a memo or a search attribute.
 *  - The URL is checked against the deployment's egress rules (MERCHANT_WEBHOOK_ALLOWED_HOSTS, no
 *    loopback under NODE_ENV=production) on create and update, and again by the worker when it
 *    dials it.
 *  - Bad input is an InputError naming the field; an unknown id is FlowNotFoundError (404).
 */
import { createHash, randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { EVENT_TYPES } from '../../contract/merchant-events';
import {
  ALL_EVENTS,
  DEFAULT_ROLL_OVERLAP_SECONDS,
  MAX_ROLL_OVERLAP_SECONDS,
  WEBHOOK_ENDPOINT_ID,
  WEBHOOK_ENDPOINTS_WORKFLOW_TYPE,
  type WebhookEndpointView,
  webhookEndpointsWorkflowId,
} from '../../contract/webhook-endpoints';
import type { WebhookEgressPolicy } from '../../config/webhook-egress';
import { generateSecret } from '../../merchant-events/signing';
import {
  changeEndpointUpdate,
  createEndpointUpdate,
  deleteEndpointUpdate,
  endpointViewsQuery,
  rollSecretUpdate,
} from '../../workflows/webhook-endpoints';
import { RECORD_FAILURE } from '../../workflows/record-failures';
import { FlowNotFoundError, InputError } from './errors';
import type { TemporalGate } from './health';
import { KeyedRecords, refusalOf } from './keyed-record';
import { checkWebhookUrl, type ResolveHost, WebhookUrl } from './merchant-events';
import { parseOrThrow } from './requests';

export type { WebhookEndpointView };

const EnabledEvents = z
  .array(z.string().refine((t) => t === ALL_EVENTS || EVENT_TYPES.includes(t), { message: `must be '*' or an event type (${EVENT_TYPES.join(', ')})` }))
  .min(1, "must name at least one event type, or '*' for all")
  .max(EVENT_TYPES.length + 1)
  .describe("the event types sent to this endpoint, or ['*'] for every type (those added later too)");
const Description = z.string().max(500, 'must be at most 500 characters').describe('what the endpoint is for (shown in lists)');
const EndpointUrl = WebhookUrl.describe('where the signed events are POSTed (checked against MERCHANT_WEBHOOK_ALLOWED_HOSTS)');

export const WebhookEndpointCreateBody = z.strictObject({ url: EndpointUrl, enabled_events: EnabledEvents, description: Description.optional() }).meta({ id: 'WebhookEndpointCreate' });
export const WebhookEndpointUpdateBody = z
  .strictObject({ url: EndpointUrl.optional(), enabled_events: EnabledEvents.optional(), description: Description.optional() })
  .meta({ id: 'WebhookEndpointUpdate' });
export const WebhookSecretRollBody = z
  .strictObject({
    expires_in_seconds: z
      .number()
      .int('must be a whole number of seconds')
      .min(0)
      .max(MAX_ROLL_OVERLAP_SECONDS, `must be at most ${MAX_ROLL_OVERLAP_SECONDS} (7 days)`)
      .optional()
      .describe(`how long the current secret keeps signing beside the new one (default ${DEFAULT_ROLL_OVERLAP_SECONDS}: 24 hours; 0: it stops at once)`),
  })
  .meta({ id: 'WebhookSecretRoll' });

export type WebhookEndpointCreate = z.infer<typeof WebhookEndpointCreateBody>;
export type WebhookEndpointUpdate = z.infer<typeof WebhookEndpointUpdateBody>;

/** An endpoint with its secret: the answer of a create and of a roll, the only ones that hold it. */
export type WebhookEndpointWithSecret = WebhookEndpointView & { secret: string };

export interface WebhookEndpointsOptions {
  gate: TemporalGate;
  taskQueue: string;
  egress: WebhookEgressPolicy;
  production: boolean;
  resolveHost?: ResolveHost;
  answerTimeoutMs?: number;
}

/** Refuses a malformed endpoint id (400 naming it) before anything is asked of Temporal. */
export function checkEndpointId(id: string, field = 'endpoint_id'): void {
  if (!WEBHOOK_ENDPOINT_ID.test(id)) throw new InputError('must be we_ followed by 24 lowercase hex digits', field);
}

export class WebhookEndpoints {
  private readonly records: KeyedRecords;
  private readonly id: string;

  constructor(private readonly opts: WebhookEndpointsOptions) {
    this.id = webhookEndpointsWorkflowId(opts.taskQueue);
    this.records = new KeyedRecords({
      client: opts.gate.temporal,
      taskQueue: opts.taskQueue,
      guard: (fn, flowId) => opts.gate.guard(fn, flowId),
      availability: () => opts.gate.availability(),
      what: 'webhook endpoints record',
      answerTimeoutMs: opts.answerTimeoutMs ?? 10_000,
    });
  }

  /**
   * Creates an endpoint; its secret is in this answer only. With an Idempotency-Key the endpoint's
   * id is derived from it, so a retry meets the endpoint the first request made and answers it
   * without a secret (`created: false`: roll the secret if the first answer was lost).
   */
  async create(body: unknown, opts: { idempotencyKey?: string } = {}): Promise<(WebhookEndpointView & { secret?: string }) & { created: boolean }> {
    const req = parseOrThrow(WebhookEndpointCreateBody, body);
    await this.checkUrl(req.url);
    const secret = generateSecret();
    const id = opts.idempotencyKey !== undefined ? `we_${createHash('sha256').update(`${this.id}\n${opts.idempotencyKey}`).digest('hex').slice(0, 24)}` : `we_${randomBytes(12).toString('hex')}`;
    const args = { id, url: req.url, enabled_events: unique(req.enabled_events), ...(req.description ? { description: req.description } : {}), secret };
    const r = await this.refused(id, this.records.updateWithStart(this.id, createEndpointUpdate, [args], { workflowType: WEBHOOK_ENDPOINTS_WORKFLOW_TYPE, args: [{}] }));
    return r.created ? { ...r.endpoint, secret, created: true } : { ...r.endpoint, created: false };
  }

  async list(): Promise<WebhookEndpointView[]> {
    try {
      return await this.records.within(this.id, () => this.opts.gate.temporal.workflow.getHandle(this.id).query(endpointViewsQuery));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return [];
      throw err;
    }
  }

  async get(id: string): Promise<WebhookEndpointView> {
    checkEndpointId(id);
    const found = (await this.list()).find((e) => e.id === id);
    if (!found) throw new FlowNotFoundError('webhook endpoint', id);
    return found;
  }

  async update(id: string, body: unknown): Promise<WebhookEndpointView> {
    checkEndpointId(id);
    const req = parseOrThrow(WebhookEndpointUpdateBody, body);
    if (req.url !== undefined) await this.checkUrl(req.url);
    const args = { id, ...req, ...(req.enabled_events ? { enabled_events: unique(req.enabled_events) } : {}) };
    return this.change(id, () => this.records.update(this.id, changeEndpointUpdate, [args]));
  }

  setStatus(id: string, status: 'enabled' | 'disabled'): Promise<WebhookEndpointView> {
    checkEndpointId(id);
    return this.change(id, () => this.records.update(this.id, changeEndpointUpdate, [{ id, status }]));
  }

  async remove(id: string): Promise<WebhookEndpointView & { deleted: true }> {
    checkEndpointId(id);
    return { ...(await this.change(id, () => this.records.update(this.id, deleteEndpointUpdate, [{ id }]))), deleted: true };
  }

  async rollSecret(id: string, body: unknown): Promise<WebhookEndpointWithSecret> {
    checkEndpointId(id);
    const req = parseOrThrow(WebhookSecretRollBody, body ?? {});
    const secret = generateSecret();
    const args = { id, secret, expires_in_seconds: req.expires_in_seconds ?? DEFAULT_ROLL_OVERLAP_SECONDS };
    return { ...(await this.change(id, () => this.records.update(this.id, rollSecretUpdate, [args]))), secret };
  }

  private async checkUrl(url: string): Promise<void> {
    await checkWebhookUrl(url, this.opts.egress, this.opts.production, this.opts.resolveHost, 'url');
  }

  /** A change of an existing endpoint: no record yet is an unknown id too. */
  private async change<T>(id: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.refused(id, fn());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError('webhook endpoint', id);
      throw err;
    }
  }

  /** The record's refusals as the client's errors: an unknown id (404), a refused input (400 naming the field). */
  private async refused<T>(id: string, p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (refusalOf(err, RECORD_FAILURE.entryNotFound)) throw new FlowNotFoundError('webhook endpoint', id);
      const invalid = refusalOf(err, RECORD_FAILURE.invalidInput);
      if (invalid) throw new InputError((err as { cause?: Error }).cause?.message ?? 'is refused', invalid.field);
      throw err;
    }
  }
}

const unique = (types: string[]): string[] => (types.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(types)]);
