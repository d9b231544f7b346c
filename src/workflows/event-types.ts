/**
 * The messages of the per-flow merchant-event delivery workflow (`events-<flow_id>`). The events'
 * data (types, the state -> event table, schedules, records) is contract/merchant-events.ts,
 * re-exported here for the workflows.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EventDeliveryView, FlowEvent } from '../contract/merchant-events';

export * from '../contract/merchant-events';

/** The flow hands over new events (in order). */
export const eventsSignal = defineSignal<[{ events: FlowEvent[] }]>('events');
/** The flow has ended: no more events will come. */
export const eventsClosedSignal = defineSignal('eventsClosed');
export const deliveriesQuery = defineQuery<EventDeliveryView>('deliveries');
/** A flow's merchant events in full (id, type, timestamp, data), oldest first: the events API reads them. */
export const flowEventsQuery = defineQuery<FlowEvent[]>('events');
