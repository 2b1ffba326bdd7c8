// The engine and formats components in Node.js (jco) against the Rust host: the same
// requests to both, the same answers (status and JSON), ids, tokens, hashes and times
// aside; and every work order the JS host's formats component did gives the same bytes
// when the Rust binary's native file work does it (`esign engine work`, with the same
// blobs, time and key).
//
// `ESIGN_BIN` names the esign binary (default: the workspace's debug build). The suite
// exports its components with `esign engine export`, so both hosts run the same
// component files, and starts it on a free loopback port with its own data directory;
// the JS host seals with that server's key.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Host, transpile, defaultSettings, toSerde } from '../host.mjs';
import { AGENT, BIN, EMAIL, PASSWORD, comparison, normalize, pdf, secretOf, signerDocument, startRust } from '../compare.mjs';

let dir, server, base, js, both, same, rustWait, login, opening;
/** The work orders the JS host did: `{ order, nowMs, outcome, made, blobs }`. */
const works = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'esign-js-host-'));
  execFileSync(BIN, ['engine', 'export', join(dir, 'engine.wasm')], { stdio: 'ignore', timeout: 60_000 });
  execFileSync(BIN, ['engine', 'export', '--formats', join(dir, 'formats.wasm')], { stdio: 'ignore', timeout: 60_000 });
  await transpile(join(dir, 'engine.wasm'), join(dir, 'jco'));
  await transpile(join(dir, 'formats.wasm'), join(dir, 'jco-formats'), 'formats');
  [server, base] = await startRust(join(dir, 'data'));
  ({ both, same, rustWait, login, opening } = comparison(base, (method, path, opts) => js.request(method, path, opts)));
  // The same settings and sealing key as that server (made at its first start), so links
  // in answers and seals match.
  const signing = {
    keyPem: readFileSync(join(dir, 'data/signing/key.pem'), 'utf8'),
    certPem: readFileSync(join(dir, 'data/signing/cert.pem'), 'utf8'),
  };
  js = new Host(join(dir, 'jco'), { ...defaultSettings(), baseUrl: base, tokenMinIntervalMs: 0n }, {
    formatsDir: join(dir, 'jco-formats'),
    signing,
  });
  // Each work order with a copy of the blobs it could read, for `esign engine work`.
  js.onWork = (w) => works.push({ ...w, blobs: new Map(js.blobs) });
  // What the Rust host does on a first start (host/src/main.rs `bootstrap`).
  const boot = await js.request('POST', '/admin/bootstrap', {
    origin: 'admin',
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  assert.equal(boot.status, 201, boot.body.toString());
});

after(() => {
  server?.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Logs in on both hosts: the two tokens. */

test('a document the whole way: create, import, send, sign, seal, download', async () => {
  const token = await opening();
  const body = await signerDocument('Consulting agreement', 'agreement.pdf');
  const [rustDoc, jsDoc] = await same('create', 'POST', '/v1/documents', { token, body });
  assert.equal(jsDoc.status, 'importing');
  const ids = [rustDoc.id, jsDoc.id];
  const path = (suffix = '') => ids.map((id) => `/v1/documents/${id}${suffix}`);

  // The import job and the page previews it asks for: the JS host runs due jobs when
  // told; the Rust host on its own.
  // (The previews job is due from the import's time on, after the first pass began.)
  assert.equal((await js.runJobs()) + (await js.runJobs()), 2);
  await rustWait(token[0], ids[0], 'the import and its previews', (d) => d.status === 'draft' && d.thumb_url !== '');
  await same('status after the import', 'GET', path('/status'), { token });
  const [detail] = await same('the document after the import', 'GET', path(), { token });
  assert.equal(detail.file_count ?? detail.files?.length ?? 1, 1, JSON.stringify(detail));
  // The page sizes the formats component read, against the Rust host's.
  const [pages] = await same('pages after the import', 'GET', path('/pages'), { token });
  assert.equal(pages.page_count, 2, JSON.stringify(pages));
  await same('recipients', 'GET', path('/recipients'), { token });

  await same('send', 'POST', path('/send'), { token, body: {} });
  assert.ok((await js.runJobs()) >= 1, 'the send schedules the render job');
  const rustSent = await rustWait(token[0], ids[0], 'the send', (d) => d.status === 'sent');
  await same('status after sending', 'GET', path('/status'), { token });
  const [, jsSent] = await same('the document after sending', 'GET', path(), { token });

  // The recipient: the page images of the signing page are the same PNGs.
  const secrets = [secretOf(rustSent), secretOf(jsSent)];
  const recipient = (suffix) => secrets.map((s) => `/v1/recipient/${s}${suffix}`);
  for (const page of [1, 2]) {
    const [rustPath, jsPath] = recipient(`/pages/${page}`);
    const rust = Buffer.from(await (await fetch(base + rustPath)).arrayBuffer());
    const mine = await js.request('GET', jsPath, { headers: AGENT });
    assert.equal(mine.status, 200, mine.body.toString());
    assert.ok(rust.subarray(0, 4).equals(Buffer.from('\x89PNG', 'latin1')), `page ${page} of the Rust host is no PNG`);
    assert.ok(mine.body.equals(rust), `page image ${page}: the JS host's PNG differs from the Rust host's`);
  }
  await same('the recipient views', 'POST', recipient('/view'), { body: {} });
  await same('the recipient signs', 'POST', recipient('/sign'), {
    body: { signature: { type: 'typed', name: 'Sam Signer' } },
  });
  assert.ok((await js.runJobs()) >= 1, 'the signature schedules the seal');
  await rustWait(token[0], ids[0], 'the seal', (d) => d.evidence?.status === 'sealed');
  const [sealed] = await same('the sealed document', 'GET', path(), { token });
  assert.equal(sealed.evidence.status, 'sealed', JSON.stringify(sealed));
  const [log] = await same('the audit log', 'GET', path('/log'), { token });
  assert.ok(log.some((e) => e.action === 'sealed_final'), JSON.stringify(log));

  // The sealed download of the JS host is signed with the server's key: the Rust host's
  // check says so, and the JS host's own (`verify-pdf` through its formats component).
  const download = await js.request('GET', path('/download')[1], { query: 'direct=true', headers: [...AGENT, ['authorization', `Bearer ${token[1]}`]] });
  assert.equal(download.status, 200, download.body.toString());
  assert.ok(download.body.subarray(0, 5).toString() === '%PDF-', 'the download is no PDF');
  const form = new FormData();
  form.append('file', new Blob([download.body], { type: 'application/pdf' }), 'sealed.pdf');
  const checked = await (await fetch(`${base}/v1/verify`, { method: 'POST', headers: { authorization: `Bearer ${token[0]}` }, body: form })).json();
  assert.equal(checked.valid, true, JSON.stringify(checked));
  assert.equal(checked.signed_by_this_service, true, JSON.stringify(checked));
  const encoded = new Response(form);
  const mine = await js.request('POST', '/v1/verify', {
    headers: [['authorization', `Bearer ${token[1]}`], ['content-type', encoded.headers.get('content-type')]],
    body: new Uint8Array(await encoded.arrayBuffer()),
  });
  assert.deepEqual(normalize(JSON.parse(mine.body)), normalize(checked), 'the JS host checks its sealed file as the Rust host does');

  // The effects the engine recorded in the JS host: the events and the recipient's mail.
  assert.deepEqual(js.outbox.events.map((e) => e.kind).slice(0, 3), ['document.created', 'document.imported', 'document.sent']);
  assert.ok(js.outbox.events.some((e) => e.kind === 'document.signed'), JSON.stringify(js.outbox.events.map((e) => e.kind)));
  assert.ok(js.outbox.mails.some((m) => m.to === 'signer@example.com'), JSON.stringify(js.outbox.mails));
  assert.deepEqual(js.errors, []);
  assert.deepEqual(js.deadJobs, []);
});

/** An outcome in one shape for both builds: nulls dropped, floats as f32, the new blobs'
 *  ids by their place (`made-1`, ...). */
function canonical(x, ids) {
  if (typeof x === 'number') return Math.fround(x);
  if (typeof x === 'string') return ids.get(x) ?? x;
  if (Array.isArray(x)) return x.map((v) => canonical(v, ids));
  if (x && typeof x === 'object') {
    return Object.fromEntries(Object.entries(x).filter(([, v]) => v !== null).map(([k, v]) => [k, canonical(v, ids)]));
  }
  return x;
}

test('every work order of the JS host gives the native build\'s bytes', () => {
  const kinds = works.map((w) => (w.order.tag === 'render' ? (w.order.val.seal ? 'seal' : 'render') : w.order.tag));
  assert.deepEqual([...new Set(kinds)].sort(), ['import-files', 'render', 'seal'], `work done: ${kinds}`);
  const keys = join(dir, 'data/signing');
  works.forEach((w, i) => {
    const at = join(dir, `work-${i}`);
    mkdirSync(join(at, 'blobs'), { recursive: true });
    for (const [id, bytes] of w.blobs) writeFileSync(join(at, 'blobs', id), bytes);
    writeFileSync(join(at, 'order.json'), JSON.stringify(toSerde(w.order)));
    execFileSync(BIN, ['engine', 'work', join(at, 'order.json'), '--blobs', join(at, 'blobs'), '--out', join(at, 'native'),
      '--now-ms', String(w.nowMs), '--signing-key', join(keys, 'key.pem'), '--signing-cert', join(keys, 'cert.pem')], { stdio: 'ignore', timeout: 120_000 });
    const native = JSON.parse(readFileSync(join(at, 'native/outcome.json'), 'utf8'));
    const ids = new Map(w.made.map(([id], n) => [id, `made-${n + 1}`]));
    assert.deepEqual(canonical(toSerde(w.outcome), ids), canonical(native, new Map()), `${kinds[i]}: the outcomes differ`);
    const made = readdirSync(join(at, 'native')).filter((f) => f.startsWith('made-'));
    assert.equal(made.length, w.made.length, `${kinds[i]}: the native work made ${made.length} blobs, the component ${w.made.length}`);
    w.made.forEach(([, bytes], n) => {
      const theirs = readFileSync(join(at, 'native', `made-${n + 1}`));
      assert.ok(theirs.equals(Buffer.from(bytes)), `${kinds[i]}: blob ${n + 1} of ${w.made.length} differs from the native build's`);
    });
  });
});

test('a seal whose signing import fails leaves the document sealing and retries', async () => {
  const auth = (t) => [...AGENT, ['authorization', `Bearer ${t}`], ['content-type', 'application/json']];
  const jsToken = (await login())[1];
  const call = async (method, p, body) => {
    const r = await js.request(method, p, { headers: auth(jsToken), body: body === undefined ? '' : JSON.stringify(body) });
    assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.body}`);
    return JSON.parse(r.body);
  };
  const doc = await call('POST', '/v1/documents', {
    name: 'Sealed later',
    file_content: (await pdf()).toString('base64'),
    file_name: 'later.pdf',
    recipients: [{ email: 'later@example.com', first_name: 'Lee', last_name: 'Later', role: 'signer' }],
  });
  await js.runJobs();
  await call('POST', `/v1/documents/${doc.id}/send`, {});
  await js.runJobs();
  const secret = secretOf(await call('GET', `/v1/documents/${doc.id}`));
  const sign = await js.request('POST', `/v1/recipient/${secret}/sign`, {
    headers: [...AGENT, ['content-type', 'application/json']],
    body: JSON.stringify({ signature: { type: 'typed', name: 'Lee Later' } }),
  });
  assert.equal(sign.status, 200, sign.body.toString());

  js.signingDown = true;
  await js.runJobs();
  let d = await call('GET', `/v1/documents/${doc.id}`);
  assert.equal(d.status, 'signed', JSON.stringify(d));
  assert.equal(d.evidence.status, 'sealing', JSON.stringify(d.evidence));
  const log = await call('GET', `/v1/documents/${doc.id}/log`);
  assert.ok(log.some((e) => e.action === 'seal_delayed'), JSON.stringify(log));
  const download = await js.request('GET', `/v1/documents/${doc.id}/download`, { query: 'direct=true', headers: auth(jsToken) });
  assert.equal(download.status, 409, download.body.toString());
  assert.equal(js.deadJobs.length, 0);
  assert.ok(js.jobs.size >= 1, 'the seal is to be tried again');

  js.signingDown = false;
  await js.runJobs(Date.now() + 10 * 60_000);
  d = await call('GET', `/v1/documents/${doc.id}`);
  assert.equal(d.evidence.status, 'sealed', JSON.stringify(d.evidence));
});

test('a call that answers 503 commits nothing', async () => {
  const [rustLogin] = await both('POST', '/v1/auth', { body: { email: EMAIL, password: PASSWORD } });
  const jsLogin = JSON.parse((await js.request('POST', '/v1/auth', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  })).body);
  assert.ok(rustLogin.json.access_token && jsLogin.access_token);
  const auth = [['authorization', `Bearer ${jsLogin.access_token}`], ['content-type', 'application/json']];
  const body = JSON.stringify({ name: 'Lost', file_content: (await pdf()).toString('base64'), file_name: 'lost.pdf' });
  const [keys, blobs, jobs] = [js.data.size, js.blobs.size, js.jobs.size];
  js.blobStorageDown = true; // files.put fails: the engine answers 503
  const down = await js.request('POST', '/v1/documents', { headers: auth, body });
  js.blobStorageDown = false;
  assert.equal(down.status, 503, down.body.toString());
  assert.deepEqual([js.data.size, js.blobs.size, js.jobs.size], [keys, blobs, jobs], 'a 503 left writes behind');
  const up = await js.request('POST', '/v1/documents', { headers: auth, body });
  assert.equal(up.status, 200, up.body.toString());
  assert.equal(js.jobs.size, jobs + 1);
});
