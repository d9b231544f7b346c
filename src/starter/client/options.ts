/** How a client is set up (MpfClient's constructor argument): the Temporal client, the queue, keys, URLs and bounds. */
import type { Client } from '@temporalio/client';
import type { DailyLimits } from '../../config/limits-env';
import type { WebhookEgressPolicy } from '../../config/webhook-egress';
import type { ResolveHost } from './merchant-events';

export interface MpfClientOptions {
  client: Client;
  taskQueue: string;
  /** PAYLOAD_ENCRYPTION_KEYS (for sealing PINs). */
  keys: string;
  /** GATEWAY_PUBLIC_URL: where the provider sends notifications and users open the PIN page. */
  publicUrl: string;
  /**
   * GATEWAY_NOTIFICATION_BASE_URL: base of the notification_url handed to the provider when it
   * reaches the gateway by another address than browsers do; default publicUrl.
   */
  notificationBaseUrl?: string;
  pinMaxAttempts?: number;
  /** SWAP_NOTIFICATION_WAIT_SECONDS: how long a confirmed swap stays open for the provider's notification (default DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS). */
  swapNotificationWaitSeconds?: number;
  /** SWAP_SETTLE_WAIT_SECONDS: how long a confirmation in doubt waits for the provider's notification (default 900). */
  swapSettleWaitSeconds?: number;
  linkLifetimeSeconds?: number;
  /** How long a finished link keeps recording late notifications (default 0). */
  linkLateNotificationGraceSeconds?: number;
  /** How long a start waits for the flow's first answer before FlowPendingError (default 30 s). */
  startAnswerTimeoutMs?: number;
  /** How long a PIN submitted by update waits for the swap's answer before FlowPendingError (default 30 s). */
  pinAnswerTimeoutMs?: number;
  /** How long a state lookup waits for a worker to answer before falling back (default 10 s). */
  queryAnswerTimeoutMs?: number;
  /** How long the category list waits for a worker before WorkerUnavailableError (default 10 s). */
  categoriesAnswerTimeoutMs?: number;
  /**
   * A call to Temporal that has not answered after this long checks that the server answers at
   * all (GetSystemInfo, 2 s deadline), and again every as long; when it does not, the call ends
   * with TemporalUnavailableError instead of retrying for half a minute (default 2 s).
   */
  temporalProbeIntervalMs?: number;
  /** NODE_ENV=production: a loopback webhook_url in a start body is refused. */
  production?: boolean;
  /**
   * Where a start body's webhook_url may point (MERCHANT_WEBHOOK_ALLOWED_HOSTS); default: the
   * variable unset (none in production, else any public host and loopback).
   */
  webhookEgress?: WebhookEgressPolicy;
  /** Resolves a webhook_url's host name for the check at the API (default: the system resolver). */
  resolveHost?: ResolveHost;
  /** GATEWAY_IDEMPOTENCY_MAX_LIVE_PER_KEY: live Idempotency-Key records per API key id (default 1000). */
  idempotencyMaxLivePerKey?: number;
  /**
   * How long after its issue a pin_token or notification token is checked with the payload keys
   * alone (no Temporal call); older ones are checked against the flow's memo (default 3600 s; keep
   * it well under the namespace's retention, see flow-tokens.ts).
   */
  tokenLocalWindowSeconds?: number;
  /**
   * The daily limits on starts (LIMIT_*; config/limits-env.ts), kept in Temporal and shared by
   * every client (limits.ts); unset: none, and a start makes no call for them.
   */
  dailyLimits?: DailyLimits;
  /** How long a start waits for the limit ledgers before LimitUnavailableError (default 5 s). */
  limitAnswerTimeoutMs?: number;
  /**
   * Units of a deployment's daily count this client leases at once from the deployment's ledger
   * (deployment-quota.ts; the gateway: DEFAULT_LEASE_BLOCK). Unset or 0: every start takes its
   * turn in that ledger, as a short-lived process (the CLI) must: it could not return what it did not use.
   */
  deploymentLeaseBlock?: number;
}

