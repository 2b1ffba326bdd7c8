// esign on the local Workers runtime (miniflare: workerd from npm, offline) against the
// Rust host, and what only this host does: the Queue consumer, the alarm, outgoing
// webhooks and mail, restarts of the runtime.
//
// `ESIGN_BIN` names the esign binary (default: the workspace's debug build): the suite
// builds dist/ from the components it embeds and starts it as the Rust host's peer, with
// that server's sealing key. All outgoing fetches of the Worker go to a second local
// Worker (testing/receiver.mjs). pdfsig and pyHanko (`ESIGN_PYTHON`) validate the
// sealed file when present; ESIGN_REQUIRE_PDF_TOOLS=1 / ESIGN_REQUIRE_PYHANKO=1 make
// them required.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { PDFDocument } from '@cantoo/pdf-lib';
import { AGENT, BIN, EMAIL, PASSWORD, comparison, normalize, pdf, secretOf, signerDocument, startRust } from '../../js/compare.mjs';
import { build } from '../build.mjs';
import { start } from '../dev.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '../../..');
let dir, server, base, mf, url, both, same, rustWait, login, opening, bindings;

/** miniflare with esign and the receiver, state in `dir/state`; `consume` false leaves
 *  the work queue without its consumer (work orders wait). */
async function startWorkers({ consume = true } = {}) {
  const extraWorkers = [
    { name: 'receiver', modules: true, compatibilityDate: '2026-07-30', scriptPath: join(here, '../testing/receiver.mjs') },
  ];
  const started = await start({ persist: join(dir, 'state'), bindings, extraWorkers, outbound: 'receiver', consume, quiet: true });
  [mf, url] = [started.mf, started.url];
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'esign-workers-'));
  process.env.ESIGN_BIN ??= BIN;
  await build();
  [server, base] = await startRust(join(dir, 'rust'));
  bindings = {
    ESIGN_ADMIN_EMAIL: EMAIL,
    ESIGN_ADMIN_PASSWORD: PASSWORD,
    ESIGN_TOKEN_MIN_INTERVAL_MS: '0',
    ESIGN_MAIL_URL: 'https://mail.test/send',
    ESIGN_MAIL_WEBHOOK_SECRET: `whsec_${Buffer.from('the mail provider signs bounces').toString('base64')}`,
    ESIGN_WEBHOOK_RETRY_SCHEDULE: '1s,1s',
    ESIGN_WORK_LEASE_MS: '2000',
    ESIGN_MAX_BODY_BYTES: String(8 << 20),
    ESIGN_TEST_FAULTS: '1',
    // The Rust server's key (made at its first start): both hosts seal alike.
    ESIGN_SIGNING_KEY: readFileSync(join(dir, 'rust/signing/key.pem'), 'utf8'),
    ESIGN_SIGNING_CERT: readFileSync(join(dir, 'rust/signing/cert.pem'), 'utf8'),
  };
  await startWorkers();
  ({ both, same, rustWait, login, opening } = comparison(base, async (method, path, { query, headers, body }) => {
    const r = await fetch(`${url}${path}${query ? `?${query}` : ''}`, {
      method,
      headers,
      body: body === '' ? undefined : body,
      signal: AbortSignal.timeout(60_000),
    });
    return { status: r.status, body: new Uint8Array(await r.arrayBuffer()) };
  }));
});

after(async () => {
  await mf?.dispose();
  server?.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** What the receiver got. */
async function seen() {
  const receiver = await mf.getWorker('receiver');
  return (await receiver.fetch('http://receiver/_seen')).json();
}

/** Polls `check` (every 100 ms, at most `secs`) until it returns something. */
async function until(what, check, secs = 60) {
  const deadline = Date.now() + secs * 1000;
  for (;;) {
    const v = await check();
    if (v) return v;
    assert.ok(Date.now() < deadline, `${what} did not happen within ${secs} s`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/** A request to the Worker with a bearer token: `{ status, json }`. */
async function ask(token, method, path, body, headers = {}) {
  const r = await fetch(url + path, {
    method,
    headers: { ...Object.fromEntries(AGENT), ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: r.status, json };
}

const workerDoc = (token, id, what, done) =>
  until(`the Worker's document ${id}: ${what}`, async () => {
    const { json } = await ask(token, 'GET', `/v1/documents/${id}`);
    return done(json) && json;
  });


test('a document the whole way, answered as the Rust host answers', async () => {
  const token = await opening();
  const body = await signerDocument('Signed at the edge', 'edge.pdf');
  const [rustDoc, workerDoc_] = await same('create', 'POST', '/v1/documents', { token, body });
  const ids = [rustDoc.id, workerDoc_.id];
  const path = (suffix = '') => ids.map((id) => `/v1/documents/${id}${suffix}`);
  // The import, and the page previews it asks for.
  const imported = (d) => d.status === 'draft' && d.thumb_url !== '';
  await rustWait(token[0], ids[0], 'the import', imported);
  await workerDoc(token[1], ids[1], 'the import', imported);
  await same('the document after the import', 'GET', path(), { token });
  const [pages] = await same('pages', 'GET', path('/pages'), { token });
  assert.equal(pages.page_count, 2, JSON.stringify(pages));

  await same('send', 'POST', path('/send'), { token, body: {} });
  const rustSent = await rustWait(token[0], ids[0], 'the send', (d) => d.status === 'sent');
  const sent = await workerDoc(token[1], ids[1], 'the send', (d) => d.status === 'sent');
  await same('the document after sending', 'GET', path(), { token });

  // The invitation went to the mail API, with the recipient's link.
  const secrets = [secretOf(rustSent), secretOf(sent)];
  const mail = await until('the invitation mail', async () =>
    (await seen()).find((r) => r.url === 'https://mail.test/send' && JSON.parse(r.body).to === 'signer@example.com'));
  const invitation = JSON.parse(mail.body);
  assert.ok(invitation.text.includes(secrets[1]), invitation.text);
  // Its HTML part too: the engine's, in the entity's branding.
  assert.match(invitation.html, /^<!doctype html>/);
  assert.ok(invitation.html.includes(`/s/${secrets[1]}"`), invitation.html);
  assert.match(invitation.tag, /^recipient:/);

  // The signing page, the OAuth metadata and an unauthenticated MCP call: the engine's,
  // as the Rust host serves them.
  const page = await fetch(`${url}/s/${secrets[1]}`, { headers: { accept: 'text/html' } });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.match(await page.text(), /<html/);
  await same('OAuth metadata', 'GET', '/.well-known/oauth-authorization-server');
  const mcp = async (base_) => (await fetch(`${base_}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status;
  assert.equal(await mcp(url), await mcp(base));
  assert.equal(await mcp(url), 401);

  // The page images are the Rust host's PNGs, byte for byte.
  const recipient = (suffix) => secrets.map((s) => `/v1/recipient/${s}${suffix}`);
  for (const page of [1, 2]) {
    const [rustPath, workerPath] = recipient(`/pages/${page}`);
    const rust = Buffer.from(await (await fetch(base + rustPath)).arrayBuffer());
    const mine = Buffer.from(await (await fetch(url + workerPath)).arrayBuffer());
    assert.ok(rust.subarray(0, 4).equals(Buffer.from('\x89PNG', 'latin1')), `page ${page}: no PNG`);
    assert.ok(mine.equals(rust), `page image ${page} differs from the Rust host's`);
  }
  await same('the recipient views', 'POST', recipient('/view'), { body: {} });
  await same('the recipient signs', 'POST', recipient('/sign'), { body: { signature: { type: 'typed', name: 'Sam Signer' } } });
  await rustWait(token[0], ids[0], 'the seal', (d) => d.evidence?.status === 'sealed');
  await workerDoc(token[1], ids[1], 'the seal', (d) => d.evidence?.status === 'sealed');
  await same('the sealed document', 'GET', path(), { token });
  await same('the audit log', 'GET', path('/log'), { token });

  // The sealed file: valid for pdfsig, pyHanko and the Rust host's own check.
  const r = await fetch(`${url}${path('/download')[1]}?direct=true`, { headers: { authorization: `Bearer ${token[1]}` } });
  assert.equal(r.status, 200);
  const sealed = Buffer.from(await r.arrayBuffer());
  const file = join(dir, 'sealed.pdf');
  const cert = join(dir, 'cert.pem');
  writeFileSync(file, sealed);
  writeFileSync(cert, await (await fetch(`${url}/v1/signing-certificate`)).text());
  validate(file, cert);
  const form = new FormData();
  form.append('file', new Blob([sealed], { type: 'application/pdf' }), 'sealed.pdf');
  const checked = await (await fetch(`${base}/v1/verify`, { method: 'POST', headers: { authorization: `Bearer ${token[0]}` }, body: form })).json();
  assert.equal(checked.valid, true, JSON.stringify(checked));
  assert.equal(checked.signed_by_this_service, true, JSON.stringify(checked));
  // The Worker's check of it (verify-pdf through the formats component in the object).
  const mine = await fetch(`${url}/v1/verify`, { method: 'POST', headers: { authorization: `Bearer ${token[1]}` }, body: form });
  assert.deepEqual(normalize(await mine.json()), normalize(checked));
});

/** POSTs headers declaring a `length`-byte body, and nothing of the body: the answer. */
function declaredBody(target, token, length) {
  return new Promise((ok, fail) => {
    const req = request(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(length) },
      timeout: 30_000,
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        ok({ status: res.statusCode, body });
        req.destroy();
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', fail);
    req.flushHeaders();
  });
}

/** pdfsig and pyHanko (tests/evidence/validate.py) on the sealed `file`. */
function validate(file, cert) {
  const pdfsig = spawnSync('pdfsig', [file], { encoding: 'utf8', timeout: 60_000 });
  if (pdfsig.error) {
    assert.ok(process.env.ESIGN_REQUIRE_PDF_TOOLS !== '1', 'pdfsig is not installed (poppler-utils)');
  } else {
    assert.match(pdfsig.stdout, /Signature is Valid\./);
    assert.match(pdfsig.stdout, /Total document signed/);
  }
  const py = process.env.ESIGN_PYTHON ?? 'python3';
  if (spawnSync(py, ['-c', 'import pyhanko, rfc8785']).status !== 0) {
    assert.ok(process.env.ESIGN_REQUIRE_PYHANKO !== '1', `${py} cannot import pyhanko`);
    return;
  }
  const out = execFileSync(py, [join(repo, 'tests/evidence/validate.py'), file, cert], { encoding: 'utf8', timeout: 60_000 });
  const result = JSON.parse(out.trim());
  assert.equal(result.bottom_line, true, out);
  assert.equal(result.coverage, 'ENTIRE_FILE', out);
}

test('webhooks are signed per Standard Webhooks and retried after a 500', async () => {
  const token = (await login())[1];
  const sub = await ask(token, 'POST', '/v1/subscriptions', { event: 'document.created', target_url: 'https://hooks.test/flaky', global: true });
  assert.equal(sub.status, 200, JSON.stringify(sub.json));
  const created = await ask(token, 'POST', '/v1/documents', { name: 'Hooked' });
  assert.equal(created.status, 200, JSON.stringify(created.json));
  const attempts = await until('the retried delivery', async () => {
    const hits = (await seen()).filter((r) => r.url === 'https://hooks.test/flaky');
    return hits.length >= 2 && hits;
  });
  assert.deepEqual(attempts.map((a) => a.status).slice(0, 2), [500, 200]);
  assert.equal(attempts[0].headers['webhook-id'], attempts[1].headers['webhook-id'], 'the id is stable across retries');
  const payload = new Webhook(sub.json.secret).verify(attempts[1].body, attempts[1].headers);
  assert.equal(payload.document_id ?? payload.document?.id ?? created.json.id, created.json.id, JSON.stringify(payload));
  assert.ok(attempts[1].at - attempts[0].at >= 700, 'retried after the schedule\'s delay');
  await ask(token, 'DELETE', `/v1/subscriptions/${sub.json.id}`);
});

test('a delivery that keeps failing is listed as waiting, then given up, then sent again', async () => {
  const token = (await login())[1];
  const sub = await ask(token, 'POST', '/v1/subscriptions', { event: 'document.lost', target_url: 'https://hooks.test/down', global: true });
  assert.equal(sub.status, 200, JSON.stringify(sub.json));
  const created = await ask(token, 'POST', '/v1/documents', { name: 'Down' });
  await ask(token, 'POST', `/v1/documents/${created.json.id}/lost`);
  const deliveries = `/v1/subscriptions/${sub.json.id}/deliveries`;
  // Between its attempts (1 s apart) it waits, with the last error.
  const waiting = await until('the delivery waiting for its retry', async () => {
    const r = await ask(token, 'GET', deliveries);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json.deliveries.find((d) => d.status === 'retrying');
  });
  assert.equal(waiting.event, 'document.lost');
  assert.match(waiting.last_error, /503/);
  assert.ok(waiting.attempts >= 1, JSON.stringify(waiting));
  // After the last attempt it is a dead letter, which a retry sends again, body and id.
  const dead = await until('the dead letter', async () =>
    (await ask(token, 'GET', '/v1/subscriptions/errors')).json.find((e) => e.subscription_id === sub.json.id));
  assert.deepEqual((await ask(token, 'GET', deliveries)).json.deliveries, []);
  const before = (await seen()).filter((r) => r.url === 'https://hooks.test/down');
  const retry = await ask(token, 'POST', `/v1/subscriptions/errors/${dead.id}/retry`);
  assert.equal(retry.status, 202, JSON.stringify(retry.json));
  const again = await until('the delivery sent again', async () => {
    const hits = (await seen()).filter((r) => r.url === 'https://hooks.test/down');
    return hits.length > before.length && hits[hits.length - 1];
  });
  assert.equal(again.headers['webhook-id'], before[0].headers['webhook-id']);
  assert.equal(again.body, before[0].body);
  await ask(token, 'DELETE', `/v1/subscriptions/${sub.json.id}`);
});

test('hard bounces: refused by the mail API, or reported on the signed route', async () => {
  const token = (await login())[1];
  const sendTo = async (email) => {
    const created = await ask(token, 'POST', '/v1/documents', {
      name: `For ${email}`, file_content: (await pdf()).toString('base64'), file_name: 'b.pdf',
      recipients: [{ email, first_name: 'Bo', role: 'signer' }],
    });
    assert.equal(created.status, 200, JSON.stringify(created.json));
    const id = created.json.id;
    await workerDoc(token, id, 'the import', (d) => d.status === 'draft');
    assert.equal((await ask(token, 'POST', `/v1/documents/${id}/send`, {})).status, 200);
    return id;
  };
  // The API answers 422: given up at once, and the recipient is hard-bounced.
  const refused = await sendTo('refused@example.com');
  await workerDoc(token, refused, 'the hard bounce', (d) => d.status === 'hardbounced');

  // Accepted, then bounced later: the provider's notice on the signed route.
  const later = await sendTo('later@example.com');
  const mail = await until('the mail', async () =>
    (await seen()).find((r) => r.url === 'https://mail.test/send' && JSON.parse(r.body).to === 'later@example.com'));
  const notice = JSON.stringify({ tag: JSON.parse(mail.body).tag, reason: '550 no such mailbox' });
  const post = (headers) => fetch(`${url}/_esign/mail/bounced`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: notice });
  const unsigned = await post({});
  assert.equal(unsigned.status, 401, await unsigned.text());
  const wh = new Webhook(bindings.ESIGN_MAIL_WEBHOOK_SECRET);
  const msgId = 'msg_bounce_1';
  const at = new Date();
  const signed = await post({ 'webhook-id': msgId, 'webhook-timestamp': String(Math.floor(at / 1000)), 'webhook-signature': wh.sign(msgId, at, notice) });
  assert.equal(signed.status, 204, await signed.text());
  const d = await workerDoc(token, later, 'the reported bounce', (x) => x.status === 'hardbounced');
  assert.equal(d.recipients[0].status, 'hardbounced', JSON.stringify(d.recipients));
});

test('a trap or a 503 commits nothing; bodies are bounded', async () => {
  const token = (await login())[1];
  const count = async () => (await ask(token, 'GET', '/v1/documents')).json.length;
  const before_ = await count();
  const down = await ask(token, 'POST', '/v1/documents', { name: 'Lost', file_content: (await pdf()).toString('base64'), file_name: 'lost.pdf' }, { 'x-esign-test-fault': 'blobs-unavailable' });
  assert.equal(down.status, 503, JSON.stringify(down.json));
  const trapped = await ask(token, 'POST', '/v1/documents', { name: 'Trapped' }, { 'x-esign-test-fault': 'trap-on-put=1' });
  assert.equal(trapped.status, 500, JSON.stringify(trapped.json));
  assert.equal(trapped.json.error, 'internal_error');
  assert.ok(trapped.json.trace_id);
  assert.equal(await count(), before_, 'a failed call left a document behind');
  // A body declared larger than the limit is refused before it is read: the answer
  // comes while the client has sent only its headers.
  const big = await declaredBody(`${url}/v1/documents`, token, 9 << 20);
  assert.equal(big.status, 413);
  assert.equal(JSON.parse(big.body).error, 'payload_too_large');
  const form = await fetch(`${url}/v1/documents`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=x' }, body: 'not a form' });
  assert.equal(form.status, 400);
  assert.equal((await form.json()).error, 'invalid_multipart');
});

test('a restart keeps documents, tokens and queued work; an expired lease sends work again', async () => {
  const token = (await login())[1];
  // A PDF of more than 2 MB (a SQL value's limit): its blob is kept in chunks.
  const doc = await PDFDocument.create();
  doc.addPage([595.28, 841.89]).drawText('A large file', { x: 50, y: 700 });
  await doc.attach(randomBytes(3 << 20), 'noise.bin');
  const large = Buffer.from(await doc.save({ useObjectStreams: false }));
  assert.ok(large.length > 3 << 20);

  // Without its consumer, the import's work order waits in the queue.
  await mf.dispose();
  await startWorkers({ consume: false });
  const created = await ask(token, 'POST', '/v1/documents', { name: 'Across a restart', file_content: large.toString('base64'), file_name: 'large.pdf' });
  assert.equal(created.status, 200, JSON.stringify(created.json));
  await new Promise((ok) => setTimeout(ok, 500));
  assert.equal((await ask(token, 'GET', `/v1/documents/${created.json.id}`)).json.status, 'importing');

  await mf.dispose();
  await startWorkers();
  const me = await ask(token, 'GET', '/v1/test');
  assert.equal(me.status, 200, 'the token outlived the restart');
  await workerDoc(token, created.json.id, 'the import after the restart', (d) => d.status === 'draft');
  const r = await fetch(`${url}/v1/documents/${created.json.id}/download?direct=true`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status, 200);
  assert.ok(Buffer.from(await r.arrayBuffer()).equals(large), 'the large blob came back whole');
});

test('without a configured key, one is generated at first start and kept', async () => {
  const own = { ...bindings };
  delete own.ESIGN_SIGNING_KEY;
  delete own.ESIGN_SIGNING_CERT;
  const persist = join(dir, 'own-key');
  const certificate = async () => {
    const { mf: m, url: u } = await start({ persist, bindings: own, quiet: true });
    try {
      const r = await fetch(`${u}/v1/signing-certificate`);
      assert.equal(r.status, 200);
      return await r.text();
    } finally {
      await m.dispose();
    }
  };
  const first = await certificate();
  assert.match(first, /^-----BEGIN CERTIFICATE-----/);
  assert.notEqual(first, bindings.ESIGN_SIGNING_CERT);
  assert.equal(await certificate(), first, 'the key changed across a restart');
});

test('a login does not hold up other requests (timing printed, not asserted)', async () => {
  const token = (await login())[1];
  const probe = async () => {
    const t0 = performance.now();
    await ask(token, 'GET', '/v1/test');
    return performance.now() - t0;
  };
  const alone = [];
  for (let i = 0; i < 10; i++) alone.push(await probe());
  const t0 = performance.now();
  const logging = ask(null, 'POST', '/v1/auth', { email: EMAIL, password: PASSWORD });
  const during = [];
  let done = false;
  logging.then(() => (done = true));
  while (!done) during.push(await probe());
  const loginMs = performance.now() - t0;
  assert.equal((await logging).status, 200);
  const max = (xs) => Math.max(...xs).toFixed(1);
  console.log(`login ${loginMs.toFixed(0)} ms; GET /v1/test alone: max ${max(alone)} ms; during the login: ${during.length} requests, max ${max(during)} ms`);
});
