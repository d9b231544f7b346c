/**
 * The provider's webhook: POST /v1/notifications/{kind}/{flow_id}/{token}, the notification_url
 * the typed client built for each flow (its shape: client/urls.ts). The body is read raw (any
 * content type, kept as the exact string for the deduplication hash) and parsed as JSON when it is
 * JSON.
 *
 *   kind not swap|paylink, or not the flow id's prefix -> 404, nothing signalled
 *   unknown flow, or token not this flow's             -> the same 404 (a forged token cannot tell
 *                                                         an existing flow from an unknown one)
 *   flow already closed, payment notified ('paid'
 *     outcome) and the flow did not end paid/confirmed -> 409 flow_closed { flow_id, state }, logged
 *                                                         at error, so the provider retries and an
 *                                                         operator sees it
 *   flow already closed, anything else                 -> 200 { received: true, applied: false }, logged at warn
 *   a notification this process already signalled to
 *     the flow (same dedup key)                        -> 200 { received: true, duplicate: true }, not signalled
 *   over the per-flow signal bound of this process     -> 429 with Retry-After, not signalled
 *   otherwise: signal the flow (payload compacted), then -> 200 { received: true }
 * The token is checked with the payload keys alone when it is a recent v2 token, else compared with
 * the hash in the flow's memo in constant time (MpfClient.verifyToken), and never logged (see
 * logging.ts). A v2 token says nothing about whether the flow is still open: the signal to a
 * closed flow fails and takes the closed-flow path, and a delivery this process would not signal
 * (duplicate, over the bound) asks the server first, so a closed flow answers as above either way.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { FlowNotFoundError } from '../../client/errors';
import { mapNotificationOutcome, parseNotificationBody } from '../../../contract/provider';
import { type FlowStatusSummary, notificationDedupKey } from '../../client/mpf-client';
import { kindOfNotificationSegment, NOTIFICATION_ROUTE } from '../../client/urls';
import { flowKindOf } from '../../../workflows/flow-ids';
import type { GatewayContext } from '../context';
import { sendError } from '../errors';
import { ErrorBody, FlowClosedBody, NotificationAck, NotificationParams, WorkerUnavailableBody } from '../schemas';

const NOTIFICATION_BODY_LIMIT = 64 * 1024;

/** Final states in which a payment notification for a closed flow has nothing to settle. */
const SETTLED_BY_PAYMENT = new Set(['paid', 'confirmed']);

export async function notificationRoutes(child: FastifyInstance, opts: GatewayContext): Promise<void> {
  const { mpf, notificationGuard, metrics } = opts;
  // This context only: every body arrives as its raw string, whatever its content type.
  child.removeAllContentTypeParsers();
  child.addContentTypeParser('*', { parseAs: 'string', bodyLimit: NOTIFICATION_BODY_LIMIT }, (_req, body, done) => done(null, body));

  child.withTypeProvider<ZodTypeProvider>().post(
    NOTIFICATION_ROUTE,
    {
      bodyLimit: NOTIFICATION_BODY_LIMIT,
      schema: {
        tags: ['notifications'],
        summary: "The provider's notifications (the flow's notification_url)",
        operationId: 'receiveNotification',
        description:
          'Authorised by the per-flow token in the path (only its hash is kept; it expires with the flow). Any body is ' +
          'accepted and kept (a large one compacted to the fields the flows read); duplicate and late deliveries are ' +
          'harmless. A wrong token and an unknown flow both answer 404, and neither reaches the flow. A payment ' +
          'notification for a flow that closed without being paid answers 409 flow_closed (retry later; an operator ' +
          'must look), any other one for a closed flow 200 with applied false. 429 with Retry-After once this gateway ' +
          'process signalled a flow too often.',
        params: NotificationParams,
        response: { 200: NotificationAck, 404: ErrorBody, 409: FlowClosedBody, 429: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req, reply) => {
      const { kind, flow_id: flowId, token } = req.params;
      const flowKind = kindOfNotificationSegment(kind);
      if (!flowKind || flowKindOf(flowId) !== flowKind) return sendError(reply, 404, 'not_found', 'no such flow');
      const verdict = await mpf.verifyToken(flowId, 'notify_token_sha256', token);
      if (verdict === 'unknown_flow' || verdict === 'bad_token') return sendError(reply, 404, 'not_found', 'no such flow');
      // Counted by result when answered (metrics.ts); a 404 counts as not_found, a 5xx as unavailable.
      const raw = typeof req.body === 'string' ? req.body : '';
      const payload = parseNotificationBody(raw);

      /** A notification for a closed flow: refused (409) when it says money arrived and the flow did not end paid. */
      const closedFlow = async (known?: FlowStatusSummary) => {
        const status = known ?? (await mpf.flowStatus(flowId));
        // A genuine v2 token of a flow the server no longer knows (deleted): as an unknown flow.
        if (!status) return sendError(reply, 404, 'not_found', 'no such flow');
        const outcome = mapNotificationOutcome(payload);
        const state = status.state;
        req.log.warn({ flow_id: flowId, outcome, state }, 'notification for a closed flow');
        if (outcome === 'paid' && !SETTLED_BY_PAYMENT.has(state ?? '')) {
          req.log.error({ flow_id: flowId, outcome, state }, 'money notified for a closed flow');
          metrics.noteNotification(req, 'refused');
          return reply.code(409).send({
            error: 'flow_closed' as const,
            message: `the flow closed as ${state ?? 'unknown'} and cannot record this payment; an operator must reconcile it`,
            flow_id: flowId,
            state,
          });
        }
        metrics.noteNotification(req, 'closed_flow');
        return { received: true as const, applied: false };
      };
      if (verdict === 'closed') return closedFlow();

      const dedupKey = notificationDedupKey(payload, raw);
      const admitted = notificationGuard.admit(flowId, dedupKey);
      // Not signalled, so the signal cannot tell: is the flow of an 'authentic' token still open?
      if (admitted !== 'signal' && verdict === 'authentic') {
        const status = await mpf.flowStatus(flowId);
        if (status?.status !== 'RUNNING') return closedFlow(status);
      }
      if (admitted === 'duplicate') {
        metrics.noteNotification(req, 'duplicate');
        return { received: true as const, duplicate: true };
      }
      if (admitted === 'over_limit') {
        metrics.noteNotification(req, 'rate_limited');
        req.log.warn({ flow_id: flowId }, 'notification signals per flow exceeded in this process');
        reply.header('retry-after', '60');
        return sendError(reply, 429, 'rate_limited', 'too many notifications for this flow; retry later');
      }
      try {
        await mpf.deliverNotification(flowId, payload, raw, dedupKey);
        notificationGuard.settle(flowId, dedupKey, true);
      } catch (err) {
        notificationGuard.settle(flowId, dedupKey, false);
        if (err instanceof FlowNotFoundError) return closedFlow(); // closed meanwhile
        throw err;
      }
      metrics.noteNotification(req, 'signalled');
      return { received: true as const };
    },
  );
}
