/** How the console shows amounts, times and list rows. */
import type { Json } from './api';

/** `2,500.00 NGN`-style text of an amount in its currency (the currency code shown as given). */
export function amountText(amount: unknown, currency: unknown): string {
  if (typeof amount !== 'number') return '—';
  const cur = typeof currency === 'string' ? currency : '';
  let n: string;
  try {
    n = new Intl.NumberFormat('en', { minimumFractionDigits: 2, maximumFractionDigits: 8 }).format(amount);
  } catch {
    n = String(amount);
  }
  return cur ? `${n} ${cur}` : n;
}

/** A UTC time as `2026-11-28 20:41 UTC`, or '—'. */
export function timeText(iso: unknown): string {
  if (typeof iso !== 'string' || Number.isNaN(Date.parse(iso))) return '—';
  return `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export interface ListRow {
  flow_id: string;
  kind: string;
  reference?: string;
  state?: string;
  execution_status: string;
  customer_ref?: string;
  amountText: string;
  createdText: string;
  /** Closed from outside the flow (terminated, timed out, cancelled in Temporal). */
  outside?: string;
}

const OUTSIDE: Record<string, string> = { TERMINATED: 'terminated', TIMED_OUT: 'timed_out', CANCELED: 'cancelled', CANCELLED: 'cancelled', FAILED: 'failed' };

/** A list item of GET /v1/swaps or /v1/payment-links as a row. */
export function rowOf(item: Json): ListRow {
  const status = String(item.execution_status ?? '');
  return {
    flow_id: String(item.flow_id),
    kind: String(item.kind),
    ...(item.reference ? { reference: String(item.reference) } : {}),
    ...(item.state ? { state: String(item.state) } : {}),
    execution_status: status,
    ...(typeof item.customer_ref === 'string' ? { customer_ref: item.customer_ref } : typeof item.user_ref === 'string' ? { customer_ref: item.user_ref } : {}),
    amountText: amountText(item.amount, item.currency),
    createdText: timeText(item.created_at),
    ...(OUTSIDE[status] ? { outside: OUTSIDE[status] } : {}),
  };
}

/** The CSV of a payments list: a header of the API's item fields, then one line per item, RFC 4180 quoting. */
export const CSV_COLUMNS = ['flow_id', 'kind', 'reference', 'amount', 'currency', 'customer_ref', 'state', 'execution_status', 'created_at', 'closed_at'] as const;

export function csvCell(v: unknown): string {
  if (v === undefined || v === null) return '';
  let s = String(v);
  // A cell a spreadsheet would run as a formula is kept as text.
  if (/^[=+@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvLine = (item: Record<string, unknown>): string => CSV_COLUMNS.map((c) => csvCell(item[c])).join(',');
