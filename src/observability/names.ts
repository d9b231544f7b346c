/** Names shared by the gateway, the client, the workflow bundle and the worker (no imports: workflow-safe). */

/** The memo field a flow's creating request id is kept in (inside the encrypted memo). */
export const REQUEST_ID_MEMO_FIELD = 'mpf_request_id';

/** The activity header the workflow passes its request id to its activities in. */
export const REQUEST_ID_ACTIVITY_HEADER = 'mpf-request-id';
