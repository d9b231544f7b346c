/**
 * Temporal Web for operators: the saved views ("awaiting PIN", "needs reconciliation", "failed
 * today", …) as visibility queries on MpfState / MpfFlowKind, their list URLs, and the browser
 * set-up that adds them and the MpfState column to Temporal Web 2.42 (which keeps both per browser,
 * in localStorage: `saved-workflow-queries` and `namespace-workflow-table-columns`; the server
 * offers no setting for either). Pure: used by `mpf web views` and the browser test.
 */

export interface OperatorView {
  id: string;
  name: string;
  query: string;
}

/** Midnight UTC of the day of `nowMs`, as visibility queries compare times. */
export function startOfDayUtc(nowMs: number): string {
  return `${new Date(nowMs).toISOString().slice(0, 10)}T00:00:00Z`;
}

/**
 * The operator's views. "Failed today" holds flows that reached `failed` and closed today, and
 * those still open in it (a failed payment link keeps recording late notifications for
 * LINK_LATE_NOTIFICATION_GRACE_SECONDS before it closes). A date in a query is fixed: run
 * `mpf web views` again the next day (Temporal Web's own "Today" view is computed when opened).
 */
export function operatorViews(nowMs: number = Date.now()): OperatorView[] {
  const today = startOfDayUtc(nowMs);
  return [
    { id: 'mpf-awaiting-pin', name: 'Swaps awaiting PIN', query: 'MpfFlowKind = "swap" AND MpfState = "awaiting_pin"' },
    { id: 'mpf-awaiting-payment', name: 'Links awaiting payment', query: 'MpfFlowKind = "payment_link" AND MpfState = "awaiting_payment"' },
    { id: 'mpf-needs-reconciliation', name: 'Needs reconciliation', query: 'MpfState = "needs_reconciliation"' },
    {
      id: 'mpf-failed-today',
      name: 'Failed today',
      query: `MpfState = "failed" AND (ExecutionStatus = "Running" OR CloseTime >= "${today}")`,
    },
    { id: 'mpf-confirming', name: 'Swaps confirming (in doubt?)', query: 'MpfFlowKind = "swap" AND MpfState = "confirming"' },
  ];
}

/** Temporal Web's workflow list filtered by a visibility query. */
export function workflowListUrl(uiBaseUrl: string, namespace: string, query: string): string {
  return `${uiBaseUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** The workflow list's columns with MpfState, MpfFlowKind and MpfTxnRef after Temporal Web's defaults. */
export const OPERATOR_COLUMNS = ['Status', 'Workflow ID', 'MpfState', 'MpfFlowKind', 'MpfTxnRef', 'Type', 'Start', 'End'].map((label) => ({ label }));

/**
 * What Temporal Web 2.42 keeps in localStorage for `namespace`: the saved views (kept beside any
 * the operator saved, replacing ours by id) and the columns. Run in the browser's console on
 * Temporal Web's origin (or by a test through the page), then reload.
 */
export function webSetupScript(namespace: string, nowMs: number = Date.now()): string {
  const views = operatorViews(nowMs).map((v) => ({ ...v, type: 'user' }));
  return [
    '(() => {',
    `  const ns = ${JSON.stringify(namespace)};`,
    `  const views = ${JSON.stringify(views)};`,
    `  const columns = ${JSON.stringify(OPERATOR_COLUMNS)};`,
    "  const saved = JSON.parse(localStorage.getItem('saved-workflow-queries') || '{}');",
    '  const ids = new Set(views.map((v) => v.id));',
    '  saved[ns] = [...(saved[ns] || []).filter((v) => !ids.has(v.id)), ...views];',
    "  localStorage.setItem('saved-workflow-queries', JSON.stringify(saved));",
    "  const cols = JSON.parse(localStorage.getItem('namespace-workflow-table-columns') || '{}');",
    '  cols[ns] = columns;',
    "  localStorage.setItem('namespace-workflow-table-columns', JSON.stringify(cols));",
    "  return 'Temporal Web: ' + views.length + ' saved views and the MpfState column set for namespace ' + ns + '; reload the page';",
    '})()',
  ].join('\n');
}
