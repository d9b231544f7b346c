/**
 * The workers' reading of the deployment's webhook endpoints (workflows/webhook-endpoints.ts): the
 * record's `endpointsForDelivery` query, whose answer (secrets included) is a payload the codec
 * encrypts on the wire and decrypts here. One reading serves every delivery of this process for
 * `ttlMs` (a short cache: a change reaches deliveries within it), and concurrent deliveries share
 * one query in flight. No record yet is no endpoint; a record that does not answer is an error
 * (the delivery waits and asks again: it never guesses the set). A gateway reads the endpoints'
 * views instead (`ofViews`: no secret), for which types a provider notification's event may go to.
 */
import { type Client, type QueryDefinition, WorkflowNotFoundError } from '@temporalio/client';
import { type EndpointTypesView, type WebhookEndpointRecord, webhookEndpointsWorkflowId } from '../contract/webhook-endpoints';
import { endpointsForDeliveryQuery, endpointViewsQuery } from '../workflows/webhook-endpoints';

/** How long one reading serves, unless told (WebhookEndpointsReaderOptions.ttlMs). */
export const DEFAULT_ENDPOINTS_TTL_MS = 2_000;
/** How long a reading waits for the record's answer. */
const READ_WAIT_MS = 10_000;

export interface WebhookEndpointsReaderOptions<T> {
  client: Client;
  taskQueue: string;
  /** How long one reading serves (0: every delivery reads the record). */
  ttlMs?: number;
  /** The record's query (default endpointsForDelivery: secrets included, for the deliveries). */
  query?: QueryDefinition<T[], []>;
}

export class WebhookEndpointsReader<T = WebhookEndpointRecord> {
  private cached: { at: number; endpoints: T[] } | undefined;
  private inFlight: Promise<T[]> | undefined;

  constructor(private readonly opts: WebhookEndpointsReaderOptions<T>) {}

  /** A reader of the endpoints' views (endpointViews: never a secret). */
  static ofViews(opts: Omit<WebhookEndpointsReaderOptions<EndpointTypesView>, 'query'>): WebhookEndpointsReader<EndpointTypesView> {
    return new WebhookEndpointsReader<EndpointTypesView>({ ...opts, query: endpointViewsQuery });
  }

  /** The endpoints now (or as read within ttlMs). */
  current = async (): Promise<T[]> => {
    const ttl = this.opts.ttlMs ?? DEFAULT_ENDPOINTS_TTL_MS;
    if (this.cached && Date.now() - this.cached.at < ttl) return this.cached.endpoints;
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  };

  /** The endpoints as read now: a reading begun after this call (it refreshes the cache too). */
  fresh = (): Promise<T[]> => this.read();

  private async read(): Promise<T[]> {
    const { client, taskQueue } = this.opts;
    const query = (this.opts.query ?? endpointsForDeliveryQuery) as QueryDefinition<T[], []>;
    const at = Date.now();
    let endpoints: T[];
    try {
      endpoints = await client.withDeadline(at + READ_WAIT_MS, () => client.workflow.getHandle(webhookEndpointsWorkflowId(taskQueue)).query(query));
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      endpoints = []; // no endpoint was ever registered
    }
    this.cached = { at, endpoints };
    return endpoints;
  }
}
