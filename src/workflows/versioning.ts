/**
 * Worker Deployment Versioning: per workflow type, whether a flow stays on the release that started
 * it (PINNED) or moves to the deployment's Current Version at its next workflow task (AUTO_UPGRADE).
 * The reasons, in docs/operations/upgrading.md ("Which flows are pinned"):
 *
 * - swapWorkflow: PINNED. A swap lives minutes (the provider's expires_in_seconds, then the settle
 *   wait of a confirmation in doubt), and it moves money: it finishes on the code that started it,
 *   and keeping the previous release's workers for minutes is cheap. The rare swap left in
 *   needs_reconciliation waits for an operator; before its release is retired it is moved with
 *   `temporal workflow update-options --versioning-override-behavior auto_upgrade` (its code stays
 *   patch-safe, like every workflow's: replay corpus, test/unit/patches.test.ts).
 * - categoriesWorkflow: PINNED. It lives seconds.
 * - paymentLinkWorkflow: AUTO_UPGRADE. A link lives up to its lifetime plus grace (a day by
 *   default) and waits for money that may arrive late: keeping every release's workers that long
 *   is more than a small team runs. Its changes go behind a live patch id (src/workflows/patches.ts).
 * - eventDeliveryWorkflow: AUTO_UPGRADE. It retries for three days.
 * - idempotencyWorkflow: AUTO_UPGRADE. Its record lives 24 hours.
 * - pinBudgetWorkflow: AUTO_UPGRADE. It lives as long as a user's wrong PINs count in its window
 *   (continuing as new), and every gateway's PIN takes a slot from it.
 * - limitLedgerWorkflow: AUTO_UPGRADE. It lives a UTC day (continuing as new), and every start
 *   under a daily limit reserves in it.
 * - closedFlowWorkflow: AUTO_UPGRADE. It carries on a flow closed from outside; in
 *   needs_reconciliation it waits for an operator, for as long as that takes.
 * - providerGuardWorkflow: AUTO_UPGRADE. It lives as long as the deployment (continuing as new),
 *   and every worker reads it every second.
 * - webhookEndpointsWorkflow: AUTO_UPGRADE. It lives as long as the deployment (continuing as
 *   new), and every delivery reads it.
 * - apiKeysWorkflow: AUTO_UPGRADE. It lives as long as the deployment (continuing as new), and
 *   every gateway reads it every few seconds.
 *
 * These workflows run on versioned workers only: the server refuses a workflow task that names a
 * behavior from a worker without deployment options ("versioning behavior cannot be specified
 * without deployment options"), so every worker of ours is versioned (src/worker.ts).
 *
 * A worker's default for a type not listed here (a prebuilt bundle of a release from before
 * versioning) is AUTO_UPGRADE: src/temporal/deployment.ts.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import type { VersioningBehavior } from '@temporalio/common';
import { categoriesWorkflow } from './categories';
import { closedFlowWorkflow } from './closed-flow';
import { eventDeliveryWorkflow } from './event-delivery';
import { idempotencyWorkflow } from './idempotency';
import { limitLedgerWorkflow } from './limit-ledger';
import { paymentLinkWorkflow } from './payment-link';
import { pinBudgetWorkflow } from './pin-budget';
import { providerGuardWorkflow } from './provider-guard';
import { swapWorkflow } from './swap';
import { webhookEndpointsWorkflow } from './webhook-endpoints';
import { apiKeysWorkflow } from './api-keys';

/** The behavior of each workflow type (read by tests and docs; applied below). */
export const VERSIONING_BEHAVIORS = {
  swapWorkflow: 'PINNED',
  categoriesWorkflow: 'PINNED',
  paymentLinkWorkflow: 'AUTO_UPGRADE',
  eventDeliveryWorkflow: 'AUTO_UPGRADE',
  idempotencyWorkflow: 'AUTO_UPGRADE',
  pinBudgetWorkflow: 'AUTO_UPGRADE',
  limitLedgerWorkflow: 'AUTO_UPGRADE',
  providerGuardWorkflow: 'AUTO_UPGRADE',
  closedFlowWorkflow: 'AUTO_UPGRADE',
  webhookEndpointsWorkflow: 'AUTO_UPGRADE',
  apiKeysWorkflow: 'AUTO_UPGRADE',
} as const satisfies Record<string, VersioningBehavior>;

const WORKFLOW_TYPES: Record<keyof typeof VERSIONING_BEHAVIORS, (...args: never[]) => Promise<unknown>> = {
  swapWorkflow,
  categoriesWorkflow,
  paymentLinkWorkflow,
  eventDeliveryWorkflow,
  idempotencyWorkflow,
  pinBudgetWorkflow,
  limitLedgerWorkflow,
  providerGuardWorkflow,
  closedFlowWorkflow,
  webhookEndpointsWorkflow,
  apiKeysWorkflow,
};
for (const [type, fn] of Object.entries(WORKFLOW_TYPES)) {
  setWorkflowOptions({ versioningBehavior: VERSIONING_BEHAVIORS[type as keyof typeof VERSIONING_BEHAVIORS] }, fn);
}
