/**
 * The control API under /_sim on the provider port: ledger, reset, faults (all of them, or one
 * transaction's), configuration, the customer's link outcome without a browser, and the OpenAPI
 * description. No authentication: it answers loopback clients only (403 otherwise).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { describeZodError } from '../contract/provider';
import { errorBody, type SimContext } from './context';
import { FaultSet, ScopedFaultSet } from './faults';
import { ConfigPatch, applyConfigPatch, publicConfig } from './options';
import { isLoopbackHost } from './notifier';
import { buildOpenApi } from './openapi';

const NotifyBody = z.object({ status: z.enum(['successful', 'failed', 'pending']).optional() });

const isLoopbackPeer = (addr: string | undefined): boolean =>
  addr !== undefined && (isLoopbackHost(addr) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(addr));

function badRequest(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(400).send(errorBody(message));
}

export function registerControl(app: FastifyInstance, ctx: SimContext): void {
  app.register(
    async (sim) => {
      sim.addHook('onRequest', async (request, reply) => {
        if (!isLoopbackPeer(request.socket.remoteAddress)) return reply.code(403).send(errorBody('The control API answers loopback clients only'));
      });

      sim.get('/ledger', async (request) => {
        const q = request.query as Record<string, string | undefined>;
        return ctx.ledger.query({ endpoint: q.endpoint || undefined, ref: q.ref || undefined });
      });

      sim.post('/reset', async () => {
        ctx.notifier.reset();
        ctx.state.reset();
        ctx.ledger.clear();
        ctx.faults.clear();
        return { status: 'success', message: 'Simulator reset' };
      });

      sim.get('/faults', async () => ({ status: 'success', data: ctx.faults.describe() }));
      sim.put('/faults', async (request, reply) => {
        const r = FaultSet.safeParse(request.body ?? {});
        if (!r.success) return badRequest(reply, describeZodError(r.error));
        ctx.faults.set(r.data);
        return { status: 'success', message: 'Faults replaced', data: ctx.faults.describe() };
      });
      sim.delete('/faults', async () => {
        ctx.faults.clear();
        return { status: 'success', message: 'Faults cleared' };
      });
      sim.put('/faults/refs/:ref', async (request, reply) => {
        const { ref } = request.params as { ref: string };
        const r = ScopedFaultSet.safeParse(request.body ?? {});
        if (!r.success) return badRequest(reply, describeZodError(r.error));
        ctx.faults.setScoped(ref, r.data.rules);
        return { status: 'success', message: `Faults of ${ref} replaced`, data: ctx.faults.describe() };
      });
      sim.delete('/faults/refs/:ref', async (request) => {
        const { ref } = request.params as { ref: string };
        ctx.faults.setScoped(ref, []);
        return { status: 'success', message: `Faults of ${ref} cleared` };
      });

      sim.get('/config', async () => ({ status: 'success', data: publicConfig(ctx.config) }));
      sim.put('/config', async (request, reply) => {
        const r = ConfigPatch.safeParse(request.body ?? {});
        if (!r.success) return badRequest(reply, describeZodError(r.error));
        applyConfigPatch(ctx.config, r.data);
        return { status: 'success', message: 'Configuration updated', data: publicConfig(ctx.config) };
      });

      for (const outcome of ['complete', 'fail'] as const) {
        sim.post(`/links/:payment_ref/${outcome}`, async (request, reply) => {
          const { payment_ref } = request.params as { payment_ref: string };
          const r = ctx.state.settleLink(payment_ref, outcome === 'complete' ? 'paid' : 'failed', 'control');
          if (!r.ok && r.error === 'unknown') return reply.code(404).send(errorBody('Unknown payment_ref'));
          if (!r.ok) return reply.code(409).send(errorBody(`Payment link is already ${r.link.state}`));
          return { status: 'success', message: `Payment link ${r.link.state}`, data: { payment_ref, state: r.link.state, redirect_to: r.redirectTo } };
        });
      }

      sim.post('/notify/:payment_ref', async (request, reply) => {
        const { payment_ref } = request.params as { payment_ref: string };
        const r = NotifyBody.safeParse(request.body ?? {});
        if (!r.success) return badRequest(reply, describeZodError(r.error));
        const sent = ctx.state.renotify(payment_ref, r.data.status);
        if (!sent) return reply.code(404).send(errorBody('Unknown payment_ref'));
        return { status: 'success', message: `Notification ${sent.status} sent`, data: { payment_ref, ...sent } };
      });

      sim.get('/openapi.json', async () => buildOpenApi());
    },
    { prefix: '/_sim' },
  );
}
