/**
 * The workflows the client starts, typed by their own functions (`import type`: no workflow code
 * loads here). `start<SwapWorkflow>(SWAP_WORKFLOW_TYPE, …)` types the arguments and the result from
 * the workflow itself, so no call site casts; and a name that is not one of the worker's registered
 * workflows (src/workflows/index.ts) does not compile here.
 */
import type * as registered from '../../workflows/index';
import type { CATEGORIES_WORKFLOW_TYPE, LINK_WORKFLOW_TYPE, SWAP_WORKFLOW_TYPE } from '../../workflows/messages';

/** The workflows the worker registers, by name. */
export type RegisteredWorkflows = typeof registered;
export type WorkflowName = keyof RegisteredWorkflows;

export type SwapWorkflow = RegisteredWorkflows[typeof SWAP_WORKFLOW_TYPE];
export type PaymentLinkWorkflow = RegisteredWorkflows[typeof LINK_WORKFLOW_TYPE];
export type CategoriesWorkflow = RegisteredWorkflows[typeof CATEGORIES_WORKFLOW_TYPE];
