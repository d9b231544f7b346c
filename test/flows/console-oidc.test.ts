/**
 * The console's sign-in through the deployment's identity provider: the topology's own IdP
 * (node-oidc-provider, tools/cluster/idp-server.ts, a process of its own) with its `mpf-console`
 * client; the authorization code flow with PKCE from the gateway's /console/sign-in/start to its
 * /console/callback, the person signing in on the IdP's login page. Their role comes from the
 * access token: support and finance read (finance exports), the operator acts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadEnv } from '../../src/config/env';
import { personTokensFromEnv } from '../../src/starter/gateway/main';
import { freePort } from '../../src/temporal/ports';
import { CONSOLE_CLIENT_ID, prepareIdpSecrets, TEMPORAL_AUDIENCE, type IdpSecrets, type PersonId } from '../../tools/cluster/idp';
import { ConsoleBrowser, textOf } from '../helpers/console';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import { IdpProcess } from '../helpers/idp-process';

describe("the console signs people in at the deployment's identity provider", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-console-oidc-'));
  let idp: IdpProcess;
  let secrets: IdpSecrets;
  let h: GatewayHarness;

  /** Sign-in as a browser does it: the gateway's redirect, the IdP's login form, the callback. */
  const signIn = async (user: PersonId, password = secrets.passwords[user]) => {
    const b = new ConsoleBrowser('http://placeholder.invalid');
    const login = await b.go('GET', `${h.gw.url}/console/sign-in/start`);
    assert.equal(login.status, 200, login.html);
    const action = /<form method="post" action="([^"]+)"/.exec(login.html)?.[1];
    assert.ok(action, `the IdP's login form: ${login.html.slice(0, 300)}`);
    const done = await b.go('POST', new URL(action.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))), idp.issuer).href, { login: user, password });
    return { b, done };
  };

  before(async () => {
    secrets = prepareIdpSecrets(dir, false);
    idp = new IdpProcess(dir, await freePort(), secrets);
    await idp.start();
    const personTokens = personTokensFromEnv(loadEnv({ GATEWAY_OIDC_ISSUER: idp.issuer, GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE }));
    assert.ok(personTokens);
    h = await startGatewayStack({ gateway: { personTokens, console: { oidcClientId: CONSOLE_CLIENT_ID } } }).catch(async (e: unknown) => {
      await idp.stop();
      throw e;
    });
  });

  after(async () => {
    await h?.stop();
    await idp?.stop();
    await stopOwnTemporal();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('support, finance and the operator sign in with the code flow and each gets the role their token carries', async () => {
    const roles: Array<[PersonId, string]> = [['support', 'Sam Support · support'], ['finance', 'Fay Finance · finance'], ['operator', 'Omar Operator · operator']];
    for (const [user, shown] of roles) {
      const { b, done } = await signIn(user);
      assert.equal(done.status, 200, `${user}: ${done.html.slice(0, 300)}`);
      assert.equal(new URL(done.path, h.gw.url).pathname, '/console/payments', user);
      assert.match(textOf(done.html), new RegExp(shown), user);
      assert.equal(/csv/i.test(done.html), user !== 'support', `${user}: the export is finance's and the operator's`);
      assert.equal(/API keys/.test(done.html), user === 'operator', `${user}: the operator's pages`);
      assert.ok(b.jar.has('mpf_console_session'));
    }
  });

  test('a wrong password signs no one in, and a callback the console did not start is refused', async () => {
    const { done } = await signIn('support', 'not-the-password');
    assert.equal(done.status, 401);
    const forged = await new ConsoleBrowser(h.gw.url).get('/console/callback?code=abc&state=not-ours');
    assert.equal(forged.status, 400);
    assert.match(textOf(forged.html), /was not started here, was already used, or took over ten minutes/);
  });
});
