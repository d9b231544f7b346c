/**
 * The provider's webhook: POST /v1/notifications/{kind}/{flow_id}/{token}, the notification_url
 * the typed client built for each flow (its shape: client/urls.ts). The body is read raw (any
 * content type, kept as the exact string for the deduplication hash) and parsed as JSON when it is
 * JSON.
 *
 *   kind not swap|paylink, or not the flow id's prefix -> 404, nothing signalled
 *   unknown flow                                       -> 404, nothing signalled
 *   token not this flow's                              -> 401, nothing signalled
 *   flow already closed (late or retried delivery)     -> 200 { received: true, applied: false }
 *   otherwise: signal the flow, then                   -> 200 { received: true }
 * The token is compared with the hash in the flow's memo in constant time (MpfClient.verifyToken)
 * and never logged (see logging.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { FlowNotFoundError } from '../../client/errors';
import { NOTIFICATION_FLOW_PREFIX, NOTIFICATION_ROUTE, type NotificationKind } from '../../client/urls';
import type { GatewayContext } from '../context';
import { sendError } from '../errors';
import { ErrorBody, NotificationAck, NotificationParams } from '../schemas';

const NOTIFICATION_BODY_LIMIT = 64 * 1024;

function parseMaybeJson(raw: string): unknown {
  const t = raw.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      /* not JSON after all: kept as text */
    }
  }
  return raw;
}

export async function notificationRoutes(child: FastifyInstance, opts: GatewayContext): Promise<void> {
  const { mpf } = opts;
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
        description:
          'Authorised by the per-flow token in the path (only its hash is kept; it expires with the flow). Any body is ' +
          'accepted and kept; duplicate and late deliveries are harmless. A wrong token answers 401 and an unknown flow 404, ' +
          'and neither reaches the flow.',
        params: NotificationParams,
        response: { 200: NotificationAck, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (req, reply) => {
      const { kind, flow_id: flowId, token } = req.params;
      const prefix = Object.hasOwn(NOTIFICATION_FLOW_PREFIX, kind) ? NOTIFICATION_FLOW_PREFIX[kind as NotificationKind] : undefined;
      if (!prefix || !flowId.startsWith(prefix)) return sendError(reply, 404, 'not_found', 'no such flow');
      const verdict = await mpf.verifyToken(flowId, 'notify_token_sha256', token);
      if (verdict === 'unknown_flow') return sendError(reply, 404, 'not_found', 'no such flow');
      if (verdict === 'bad_token') return sendError(reply, 401, 'unauthorized', 'this notification URL is not valid');
      if (verdict === 'closed') return { received: true as const, applied: false };
      const raw = typeof req.body === 'string' ? req.body : '';
      try {
        await mpf.deliverNotification(flowId, parseMaybeJson(raw), raw);
      } catch (err) {
        if (err instanceof FlowNotFoundError) return { received: true as const, applied: false }; // closed meanwhile
        throw err;
      }
      return { received: true as const };
    },
  );
}
