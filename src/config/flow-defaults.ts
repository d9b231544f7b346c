/**
 * Defaults of the flow settings the typed client puts into a flow's input (the gateway's and CLI's
 * environment variables override them: src/config/env.ts).
 */

/**
 * How long a swap stays open after `confirmed` for the provider's notification (swap.completed),
 * which it then records (SWAP_NOTIFICATION_WAIT_SECONDS). The provider notifies as soon as it has
 * converted, so the swap normally closes within moments, with the provider's own word on it in its
 * history. Closing at once instead (0) loses that record, and the notification then usually lands
 * in the very workflow task that completes the swap: Temporal refuses that completion
 * (UnhandledCommand), the worker drops the swap from its cache and replays its whole history to
 * take the signal — measured as the main cost difference per swap in `npm run bench`.
 */
export const DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS = 60;
