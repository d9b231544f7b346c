// The workflows registered on the worker (the bundle's entry point).
export { swapWorkflow } from './swap';
export { paymentLinkWorkflow } from './payment-link';
export { categoriesWorkflow } from './categories';
export { idempotencyWorkflow } from './idempotency';
export { eventDeliveryWorkflow } from './event-delivery';
export { pinBudgetWorkflow } from './pin-budget';
export { limitLedgerWorkflow } from './limit-ledger';
export { providerGuardWorkflow } from './provider-guard';
export { closedFlowWorkflow } from './closed-flow';
export { webhookEndpointsWorkflow } from './webhook-endpoints';
export { apiKeysWorkflow } from './api-keys';
// Per type: PINNED or AUTO_UPGRADE (Worker Deployment Versioning).
import './versioning';
