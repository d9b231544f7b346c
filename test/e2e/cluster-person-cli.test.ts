/**
 * The operator's shell signs in as a person: `mpf cluster login` (the password from a file or
 * stdin, never an option) writes the person's access token, and a shell that sources cluster.env
 * as the runbook says hands it to `temporal` and `mpf` (TEMPORAL_API_KEY) and to the gateway's
 * operator routes (MPF_ACCESS_TOKEN, sent as `Authorization: Bearer`). `mpf swap list` works as
 * the operator and is refused without a token; the viewer's `temporal workflow terminate` is
 * refused; a reconciliation resolved through the gateway is recorded under the person, not the
 * operator's API key, and a backend key named for that command beside the person's token is
 * refused before anything is sent, naming both (the reconciliation runbook's example). A wrong
 * password, no cluster and an IdP that does not answer are refused in one line, exit 1, with no
 * stack trace, and no password or token is ever printed.
 * `mpf cluster up` (1 worker, 1 gateway; authorisation is on by default) is started once for this
 * file; if it cannot start, every test fails (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ClusterInfo } from '../../tools/cluster/state';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/http';
import { cleanUpCluster, MPF_BIN, startClusterForTest, type MpfProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const ROOT = path.resolve(__dirname, '..', '..');
const UP_TIMEOUT_MS = 15 * 60_000;
/** A compact JWS (a token) anywhere in printed text. */
const JWT = /eyJ[\w-]{10,}\.[\w-]{10,}/;
/** A Node stack frame: nothing the CLI prints to a person should carry one. */
const STACK = /\n\s+at .+:\d+:\d+/;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;

const passwordFile = (who: 'viewer' | 'operator' | 'administrator') => path.join(info.secretsDir, `idp_password_${who}`);
const tokenPath = (who: string) => path.join(stateDir, 'tokens', who);

/**
 * `command` in a fresh bash that sources cluster.env as the runbook says (`set -a; . cluster.env;
 * set +a`), with `mpf` the checkout's CLI; nothing of this process's environment but PATH.
 */
function inShell(command: string, input?: string): { status: number | null; stdout: string; stderr: string; all: string } {
  const script = `mpf() { node '${MPF_BIN}' "$@"; }\nset -a; . '${info.envFile}'; set +a\n${command}`;
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: stateDir },
    encoding: 'utf8',
    timeout: 120_000,
    ...(input !== undefined ? { input } : { stdio: ['ignore', 'pipe', 'pipe'] }),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, all: `${r.stdout}\n${r.stderr}` };
}

/** Nothing secret and no stack trace in what a command printed. */
function printsNothingSecret(all: string, what: string, password?: string): void {
  assert.doesNotMatch(all, JWT, `${what}: no token printed`);
  assert.doesNotMatch(all, STACK, `${what}: no stack trace`);
  if (password) assert.ok(!all.includes(password), `${what}: the password is not printed`);
}

/** A loopback port nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const backendKey = () => fs.readFileSync(path.join(info.secretsDir, 'api_key_backend'), 'utf8').trim();

describe("the operator's shell signs in as a person: mpf cluster login, then temporal and mpf act as that person", () => {
  before(
    async () => {
      const cluster = startClusterForTest({ prefix: 'person-cli', workers: 1, gateways: 1, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
      assert.equal(info.auth, true, 'calls to Temporal are authorised by default');
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test('before anyone signs in, mpf swap list in the shell is refused in one line naming the missing token, TEMPORAL_API_KEY and mpf cluster login', () => {
    assert.ok(!fs.existsSync(tokenPath('operator')), 'no one signed in yet');
    const r = inShell('mpf swap list');
    assert.equal(r.status, 1, r.all);
    assert.match(r.stderr, /^mpf: Temporal refused this shell's credentials: .*no access token.*TEMPORAL_API_KEY.*; sign in \(mpf cluster login, then source cluster\.env again\)/m);
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    printsNothingSecret(r.all, 'swap list refused');
  });

  test('a wrong password is refused in one line naming the unknown user or wrong password, exit 1, the password never printed and no token written', () => {
    const wrong = 'not-the-password-7f3a';
    const r = inShell(`mpf cluster login --user operator --state-dir '${stateDir}'`, `${wrong}\n`);
    assert.equal(r.status, 1, r.all);
    assert.match(r.stderr, /^mpf cluster login: the identity provider refused the sign-in of operator: unknown user or wrong password$/m);
    printsNothingSecret(r.all, 'wrong password', wrong);
    assert.ok(!fs.existsSync(tokenPath('operator')), 'a refused sign-in writes no token');
  });

  test('no cluster in the state dir, an identity provider that does not answer, no password and an unknown person are each refused in one line naming what is wrong', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-person-cli-none-'));
    // A copy of this cluster's state whose IdP listens nowhere (the cluster itself is running).
    const deaf = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-person-cli-deaf-'));
    try {
      const none = inShell(`mpf cluster login --user operator --state-dir '${empty}' --password-file '${passwordFile('operator')}'`);
      assert.equal(none.status, 1, none.all);
      assert.match(none.stderr, new RegExp(`^mpf cluster login: no cluster is running from ${empty.replace(/[.]/g, '\\.')} \\(start one with: mpf cluster up`, 'm'));
      printsNothingSecret(none.all, 'no cluster');

      fs.copyFileSync(path.join(stateDir, 'cluster.pid'), path.join(deaf, 'cluster.pid'));
      const port = await closedPort();
      fs.writeFileSync(path.join(deaf, 'cluster.json'), JSON.stringify({ ...info, stateDir: deaf, idp: { ...info.idp!, issuer: `http://127.0.0.1:${port}/` } }));
      const idpDown = inShell(`mpf cluster login --user operator --state-dir '${deaf}' --password-file '${passwordFile('operator')}'`);
      assert.equal(idpDown.status, 1, idpDown.all);
      assert.match(idpDown.stderr, new RegExp(`^mpf cluster login: the identity provider at http://127\\.0\\.0\\.1:${port}/ does not answer \\(ECONNREFUSED\\): is it running\\? \\(mpf cluster restart idp`, 'm'));
      printsNothingSecret(idpDown.all, 'IdP down', fs.readFileSync(passwordFile('operator'), 'utf8').trim());

      const noPassword = inShell(`mpf cluster login --user operator --state-dir '${stateDir}' </dev/null`);
      assert.equal(noPassword.status, 1, noPassword.all);
      assert.match(noPassword.stderr, /no password given for operator/);

      const nobody = inShell(`mpf cluster login --user mallory --state-dir '${stateDir}' </dev/null`);
      assert.notEqual(nobody.status, 0, nobody.all);
      assert.match(nobody.stderr, /--user.*mallory.*must be one of viewer, operator, administrator, support, finance/);
      printsNothingSecret(`${noPassword.all}${nobody.all}`, 'no password, unknown person');
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
      fs.rmSync(deaf, { recursive: true, force: true });
    }
  });

  test("`mpf cluster login --user operator --password-file` signs the operator in without printing a token (0600 file), and mpf swap list in the sourced shell then works as the operator", () => {
    const login = inShell(`mpf cluster login --user operator --state-dir '${stateDir}' --password-file '${passwordFile('operator')}'`);
    assert.equal(login.status, 0, login.all);
    assert.match(login.stdout, /^signed in as operator until \d{4}-\d\d-\d\dT[\d:.]+Z; the access token is in .*tokens\/operator \(0600\)$/m);
    assert.match(login.stdout, /source cluster\.env again/);
    printsNothingSecret(login.all, 'login', fs.readFileSync(passwordFile('operator'), 'utf8').trim());
    assert.equal(fs.statSync(tokenPath('operator')).mode & 0o777, 0o600, 'the token file is 0600');
    assert.match(fs.readFileSync(tokenPath('operator'), 'utf8'), JWT, 'the file holds the access token');
    assert.doesNotMatch(fs.readFileSync(info.envFile, 'utf8'), JWT, 'cluster.env holds no token itself');

    const listed = inShell('mpf swap list');
    assert.equal(listed.status, 0, listed.all);
    printsNothingSecret(listed.all, 'swap list');
    // The same shell without the token is refused: the token, not the certificate, let it in.
    const without = inShell('unset TEMPORAL_API_KEY; mpf swap list');
    assert.equal(without.status, 1, without.all);
    assert.match(without.stderr, /no access token/);
  });

  test("with the viewer signed in, `temporal workflow terminate` is refused naming the operator's role, and the swap keeps running", async () => {
    const started = await gatewayCaller(info.gateways[0]!.url, backendKey()).api('POST', '/v1/swaps', swapBody(uniqueRef('person-cli')));
    assert.equal(started.status, 201, started.text);
    const swapId = started.json.swap_id as string;
    // Piped on stdin this time, as a person types it.
    const viewer = inShell(
      `mpf cluster login --user viewer --state-dir '${stateDir}' < '${passwordFile('viewer')}' && export TEMPORAL_API_KEY="$(cat '${tokenPath('viewer')}')" && temporal workflow terminate --workflow-id '${swapId}' --reason 'a viewer tries'`,
    );
    assert.notEqual(viewer.status, 0, `the viewer must not terminate: ${viewer.all}`);
    assert.match(viewer.stdout, /^signed in as viewer until /m);
    assert.match(viewer.all, /TerminateWorkflowExecution refused to viewer \(namespace \\?"default\\?": read\).*default:admin/);
    printsNothingSecret(viewer.all, 'viewer', fs.readFileSync(passwordFile('viewer'), 'utf8').trim());
    // The operator's shell (cluster.env reads the operator's token) still sees it waiting for its PIN.
    const status = inShell(`mpf swap status '${swapId}' --json`);
    assert.equal(status.status, 0, status.all);
    assert.equal((JSON.parse(status.stdout) as { state: string }).state, 'awaiting_pin');
  });

  test("a reconciliation resolved through the gateway from the operator's shell is recorded under the person (their subject), not the operator's API key; the viewer is refused with 403", async () => {
    const ref = uniqueRef('person-cli');
    const flowId = `paylink-${ref}`;
    // A payment link the provider failed, then notified as paid: it waits in needs_reconciliation.
    const created = inShell(`mpf link create --user-ref person-cli --txn-merchant-ref '${ref}' --amount 2500 --full-name 'Ada Lovelace' --email ada@example.com --phone +2348000000000 --redirect-url https://shop.example.com/return --json`);
    assert.equal(created.status, 0, created.all);
    const paymentRef = (JSON.parse(created.stdout) as { payment_ref: string }).payment_ref;
    const sim = inShell(`mpf sim fail '${paymentRef}' && mpf sim notify '${paymentRef}' --status successful`);
    assert.equal(sim.status, 0, sim.all);
    const gw = gatewayCaller(info.gateways[0]!.url, backendKey());
    await eventually(async () => (await gw.api('GET', `/v1/payment-links/${flowId}`)).json.state === 'needs_reconciliation', 60_000, `${flowId} in needs_reconciliation`);

    const resolve = `mpf reconcile resolve '${flowId}' --gateway "$GATEWAY_PUBLIC_URL" --outcome paid --provider-reference SIM-STATEMENT-1 --note 'paid per the statement' --json`;
    const asViewer = inShell(`export MPF_ACCESS_TOKEN="$(cat '${tokenPath('viewer')}')"; ${resolve}`);
    assert.equal(asViewer.status, 1, asViewer.all);
    assert.match(asViewer.stderr, /^mpf: the gateway answered 403 forbidden: mpf reconcile resolve needs the operator's role; the person in MPF_ACCESS_TOKEN lacks it .*person viewer holds default:read/m);

    // The runbook's refusal example in the operator's shell: a backend key named for the command
    // beside the person's token is refused before anything is sent (exit 2), naming both sources;
    // `--as key` sends the key, refused 403 naming its file. The flow is untouched.
    const backendFile = path.join(info.secretsDir, 'api_key_backend');
    const both = inShell(`MPF_API_KEY_FILE='${backendFile}' ${resolve}`);
    assert.equal(both.status, 2, both.all);
    assert.match(both.stderr, new RegExp(`^mpf: two credentials for the gateway's operator routes: MPF_ACCESS_TOKEN \\(a person's access token\\) and MPF_API_KEY_FILE=${backendFile.replace(/\./g, '\\.')} \\(an API key\\); nothing was sent\\. Pick one: mpf --as person … or mpf --as key …`, 'm'));
    printsNothingSecret(both.all, 'two credentials');
    assert.ok(!both.all.includes(backendKey()), 'the key is not printed');
    const asKey = inShell(`MPF_API_KEY_FILE='${backendFile}' mpf --as key ${resolve.replace(/^mpf /, '')}`);
    assert.equal(asKey.status, 1, asKey.all);
    assert.ok(asKey.stderr.includes(`403 forbidden: mpf reconcile resolve needs an API key of role operator; the key sent came from MPF_API_KEY_FILE=${backendFile} (`), asKey.all);
    assert.equal((await gw.api('GET', `/v1/payment-links/${flowId}`)).json.state, 'needs_reconciliation', 'nothing resolved');

    // The operator's shell, as cluster.env leaves it once signed in: MPF_ACCESS_TOKEN (the person), and no API key beside it.
    assert.equal(inShell('printf %s "$MPF_API_KEY_FILE"').stdout, '', 'cluster.env sets no operator key once someone signed in');
    const listed = inShell('MPF_GATEWAY_URL="$GATEWAY_PUBLIC_URL" mpf reconcile list');
    assert.equal(listed.status, 0, listed.all);
    assert.match(listed.stdout, new RegExp(`^${flowId}  needs_reconciliation`, 'm'));
    const resolved = inShell(resolve);
    assert.equal(resolved.status, 0, resolved.all);
    printsNothingSecret(resolved.all, 'resolve');
    const view = JSON.parse(resolved.stdout) as { state: string; reconciliation?: { operator?: string; outcome?: string } };
    assert.equal(view.state, 'reconciled');
    assert.equal(view.reconciliation?.outcome, 'paid');
    assert.equal(view.reconciliation?.operator, 'person operator', 'the audit record names the person (subject operator), not `key operator (…)`');

    // The gateway's answer to the backend, and its log line of the request, name the same person.
    const after = await gw.api('GET', `/v1/payment-links/${flowId}`);
    assert.equal(after.json.state, 'reconciled');
    assert.equal((after.json.reconciliation as { operator: string }).operator, 'person operator');
    const log = fs.readFileSync(path.join(info.logDir, 'gateway-1.log'), 'utf8');
    const lines = log.split('\n').filter((l) => l.includes('"person_sub":"operator"') && l.includes('authorised this request'));
    assert.ok(lines.length >= 1, "the gateway logged the operator's subject for the resolve");
    assert.doesNotMatch(log, JWT, 'the gateway logs no token');
  });
});
