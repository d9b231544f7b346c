/**
 * The demo's stand-in for the merchant's website: the page a customer's browser lands on after
 * paying (the payment link's redirect_url). It only shows what the redirect carried; the
 * payment's real outcome arrives separately as the provider's notification to the gateway.
 */
import type { AddressInfo } from 'node:net';
import fastify from 'fastify';

export interface MerchantSite {
  url: string;
  /** The redirect_url to give a payment link. */
  returnUrl: string;
  close(): Promise<void>;
}

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

export async function startMerchantSite(host = '127.0.0.1'): Promise<MerchantSite> {
  const app = fastify({ logger: false, forceCloseConnections: true });
  app.get('/return', async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    const status = q.status ?? 'unknown';
    const ref = q.payment_ref ?? '';
    return reply.type('text/html; charset=utf-8').send(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Demo shop: thank you</title></head>
<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto">
<h1 id="title">Thank you for your order</h1>
<p>The payment page reported <strong id="status">${esc(status)}</strong> for payment <code id="payment-ref">${esc(ref)}</code>.</p>
<p>The order is confirmed once the payment provider's notification reaches the shop's backend.</p>
</body></html>`);
  });
  await app.listen({ host, port: 0 });
  const url = `http://${host}:${(app.server.address() as AddressInfo).port}`;
  return { url, returnUrl: `${url}/return`, close: () => app.close() };
}
