/**
 * The workers' reading of the deployment's webhook endpoints (workflows/webhook-endpoints.ts): the
 * record's `endpointsForDelivery` query, whose answer (secrets included) is a payload the codec
 * encrypts on the wire and decrypts here. One reading serves every delivery of this process for
 * `ttlMs` (a short cache: a change reaches deliveries within it), and concurrent deliveries share
 * one query in flight. No record yet is no endpoint; a record that does not answer is an error
 * (the delivery waits and asks again: it never guesses the set).
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { type WebhookEndpointRecord, webhookEndpointsWorkflowId } from '../contract/webhook-endpoints';
import { endpointsForDeliveryQuery } from '../workflows/webhook-endpoints';

/** How long one reading serves, unless told (WebhookEndpointsReaderOptions.ttlMs). */
export const DEFAULT_ENDPOINTS_TTL_MS = 2_000;
/** How long a reading waits for the record's answer. */
const READ_WAIT_MS = 10_000;

export interface WebhookEndpointsReaderOptions {
  client: Client;
  taskQueue: string;
  /** How long one reading serves (0: every delivery reads the record). */
  ttlMs?: number;
}

export class WebhookEndpointsReader {
  private cached: { at: number; endpoints: WebhookEndpointRecord[] } | undefined;
  private inFlight: Promise<WebhookEndpointRecord[]> | undefined;

  constructor(private readonly opts: WebhookEndpointsReaderOptions) {}

  /** The endpoints now (or as read within ttlMs). */
  current = async (): Promise<WebhookEndpointRecord[]> => {
    const ttl = this.opts.ttlMs ?? DEFAULT_ENDPOINTS_TTL_MS;
    if (this.cached && Date.now() - this.cached.at < ttl) return this.cached.endpoints;
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  };

  /** The endpoints as read now: a reading begun after this call (it refreshes the cache too). */
  fresh = (): Promise<WebhookEndpointRecord[]> => this.read();

  private async read(): Promise<WebhookEndpointRecord[]> {
    const { client, taskQueue } = this.opts;
    const at = Date.now();
    let endpoints: WebhookEndpointRecord[];
    try {
      endpoints = await client.withDeadline(at + READ_WAIT_MS, () => client.workflow.getHandle(webhookEndpointsWorkflowId(taskQueue)).query(endpointsForDeliveryQuery));
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      endpoints = []; // no endpoint was ever registered
    }
    this.cached = { at, endpoints };
    return endpoints;
  }
}
