/**
 * merchant-payment-flows as a library (the package's main export, `import … from
 * 'merchant-payment-flows'`): the typed client a Node backend uses to start and drive swaps and
 * payment links on Temporal, the request types inferred from the contract's zod schemas, the flows'
 * views and messages, typed workflow references, and the errors the client throws.
 *
 *   const mpf = await mpfClientFromEnv(loadEnv());   // TEMPORAL_*, PAYLOAD_ENCRYPTION_KEYS, GATEWAY_PUBLIC_URL
 *   const { swap, pin_url } = await mpf.startSwap({ user_ref, from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref });
 *
 * A service that talks only to the gateway over HTTP uses `merchant-payment-flows/http` instead.
 */
export {
  MpfClient,
  type MpfClientOptions,
  type SwapStartRequest,
  type LinkCreateRequest,
  type PinRequest,
  SwapStartBody,
  LinkCreateBody,
  PinBody,
  parseOrThrow,
  type StartedSwap,
  type CreatedLink,
  type CategoriesResult,
  type Viewed,
  type FlowExecution,
  type FlowStatusSummary,
} from './starter/client/mpf-client';
export { mpfClientFromEnv, type MpfClientOverrides } from './starter/client/from-env';
export {
  InputError,
  DuplicateFlowError,
  FlowNotFoundError,
  FlowClosedError,
  FlowPendingError,
  PinNotAcceptedError,
  WorkerUnavailableError,
  NotCancellableError,
  TemporalUnavailableError,
  TemporalCredentialsRefusedError,
  TemporalPersistenceUnavailableError,
  NotResolvableError,
  PinBudgetExhaustedError,
  PinBudgetUnavailableError,
  LimitExceededError,
  LimitUnavailableError,
} from './starter/client/errors';
export { ProviderUnavailableError } from './starter/client/provider-guard';
export type { CategoriesWorkflow, PaymentLinkWorkflow, RegisteredWorkflows, SwapWorkflow, WorkflowName } from './starter/client/workflow-refs';
export {
  SWAP_WORKFLOW_TYPE,
  LINK_WORKFLOW_TYPE,
  CATEGORIES_WORKFLOW_TYPE,
  SWAP_TERMINAL_STATES,
  LINK_TERMINAL_STATES,
  swapWorkflowId,
  linkWorkflowId,
  swapStateQuery,
  linkStateQuery,
  submitPinSignal,
  submitPinUpdate,
  cancelSwapUpdate,
  cancelLinkUpdate,
  type SwapState,
  type SwapView,
  type LinkState,
  type LinkView,
  type PinOutcome,
  type NotificationRecord,
  type SwapWorkflowInput,
  type LinkWorkflowInput,
} from './workflows/messages';
export type { Category } from './contract/provider';
export type { CategoryTree } from './contract/categories';
export { loadEnv, ConfigError, type AppEnv } from './config/env';
export { temporalTargetFromEnv, connectClient, TemporalConnectError, type TemporalTarget } from './temporal/connection';
export { clientDataConverter } from './codec/data-converter';
export { generateDevKeys } from './codec/keys';
