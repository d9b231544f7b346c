/**
 * What one flow asks of the Temporal server, read from its history: events, workflow tasks,
 * activity tasks, local activities, timers, search-attribute upserts, updates, signals, child
 * workflows and commands, for ours and the control side by side. Every extra event of ours is
 * then named (the `events` list) and can be justified or removed.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const EventType = temporal.api.enums.v1.EventType;

/** Events a workflow task's commands produce (the server writes one per command). */
const COMMAND_EVENTS = new Set<number>([
  EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
  EventType.EVENT_TYPE_TIMER_STARTED,
  EventType.EVENT_TYPE_TIMER_CANCELED,
  EventType.EVENT_TYPE_MARKER_RECORDED,
  EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
  EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
  EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

export interface HistoryCounts {
  workflowId: string;
  events: number;
  workflowTasks: number;
  workflowTasksFailed: number;
  activityTasks: number;
  localActivities: number;
  timers: number;
  upserts: number;
  updates: number;
  signals: number;
  children: number;
  commands: number;
  /** The history's event types in order (short names), so each event can be named. */
  eventTypes: string[];
}

const shortName = (t: number): string =>
  (EventType[t] ?? String(t))
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** Counts one closed workflow's history (waits up to `waitMs` for it to close). */
export async function historyCounts(client: Client, workflowId: string, waitMs = 90_000): Promise<HistoryCounts> {
  const handle = client.workflow.getHandle(workflowId);
  await Promise.race([handle.result().catch(() => undefined), new Promise((r) => setTimeout(r, waitMs))]);
  const history = await handle.fetchHistory();
  const types = (history.events ?? []).map((e) => Number(e.eventType));
  const markers = (history.events ?? []).filter((e) => Number(e.eventType) === EventType.EVENT_TYPE_MARKER_RECORDED);
  const n = (t: number): number => types.filter((x) => x === t).length;
  return {
    workflowId,
    events: types.length,
    workflowTasks: n(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
    workflowTasksFailed: n(EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED),
    activityTasks: n(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    localActivities: markers.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
    timers: n(EventType.EVENT_TYPE_TIMER_STARTED),
    upserts: n(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES) + n(EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED),
    updates: n(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
    signals: n(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
    children: n(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
    commands: types.filter((t) => COMMAND_EVENTS.has(t)).length,
    eventTypes: types.map(shortName),
  };
}

/** The Markdown table of ours beside the control for each family. */
export function historyTable(rows: { family: string; side: string; counts: HistoryCounts }[]): string {
  const cols: [string, keyof HistoryCounts][] = [
    ['events', 'events'],
    ['workflow tasks', 'workflowTasks'],
    ['failed tasks', 'workflowTasksFailed'],
    ['activity tasks', 'activityTasks'],
    ['local activities', 'localActivities'],
    ['timers', 'timers'],
    ['upserts', 'upserts'],
    ['updates', 'updates'],
    ['signals', 'signals'],
    ['children', 'children'],
    ['commands', 'commands'],
  ];
  return [
    `| flow | side | ${cols.map(([h]) => h).join(' | ')} |`,
    `|---|---|${cols.map(() => '---:').join('|')}|`,
    ...rows.map((r) => `| ${r.family} | ${r.side} | ${cols.map(([, k]) => String(r.counts[k])).join(' | ')} |`),
    '',
    ...rows.map((r) => `- ${r.family} ${r.side} (\`${r.counts.workflowId}\`): ${r.counts.eventTypes.join(' → ')}`),
  ].join('\n');
}
