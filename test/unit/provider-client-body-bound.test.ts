/**
 * The provider client never reads more than MAX_RESPONSE_BYTES of an answer: a provider (a raw
 * loopback HTTP server standing in for a misbehaving one) that sends more, with or without a
 * Content-Length, gets a classified ProviderError, never an unbounded read; an answer within the
 * bound, with or without a Content-Length, is read whole.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_RESPONSE_BYTES, ProviderClient, ProviderError } from '../../src/provider';
import { SIM_CREDENTIALS } from '../helpers/provider';

type Answer = (res: ServerResponse) => void;

const categoriesBody = (padding: number): string =>
  JSON.stringify({ status: 'success', message: 'ok', pad: 'x'.repeat(padding), data: { data: [{ code: '1', name: 'Airtime', parent_code: null }] } });

describe('the provider client bounds what it reads of an answer', () => {
  let server: Server;
  let answer: Answer = () => undefined;
  let baseUrl: string;

  before(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const listWith = async (a: Answer) => {
    answer = a;
    const client = new ProviderClient({ baseUrl, ...SIM_CREDENTIALS });
    try {
      return await client.listCategories();
    } finally {
      await client.close();
    }
  };

  test('an answer within the bound is read whole, with a Content-Length and chunked', async () => {
    const body = categoriesBody(200_000);
    const withLength = await listWith((res) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body));
    assert.equal(withLength[0]?.code, '1');
    const chunked = await listWith((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < body.length; i += 16_384) res.write(body.slice(i, i + 16_384));
      res.end();
    });
    assert.equal(chunked[0]?.code, '1');
  });

  test('an answer declaring more than the bound is refused with a ProviderError', async () => {
    const body = categoriesBody(MAX_RESPONSE_BYTES + 10);
    await assert.rejects(
      listWith((res) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)),
      (err: unknown) => err instanceof ProviderError,
    );
  });

  test('a chunked answer growing past the bound is cut off with a ProviderError', async () => {
    const body = categoriesBody(MAX_RESPONSE_BYTES + 10);
    await assert.rejects(
      listWith((res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < body.length; i += 65_536) res.write(body.slice(i, i + 65_536));
        res.end();
      }),
      (err: unknown) => err instanceof ProviderError,
    );
  });
});
