// The engine component in Node.js (jco) against the Rust host: the same requests to both,
// the same answers (status and JSON), ids, tokens, hashes and times aside.
//
// `ESIGN_BIN` names the esign binary (default: the workspace's debug build). The suite
// exports its engine with `esign engine export`, so both hosts run the same component
// file, and starts it on a free loopback port with its own data directory.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { PDFDocument } from '@cantoo/pdf-lib';
import { Host, transpile, defaultSettings } from '../host.mjs';

const BIN = process.env.ESIGN_BIN ?? resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../target/debug/esign');
const EMAIL = 'admin@example.com';
const PASSWORD = 'admin-password-1';
const AGENT = [['user-agent', 'esign-js-host-test']];

let dir, server, base, js;

/** Starts `esign serve` and waits (at most 60 s) for its "listening" line. */
function startRust(dataDir) {
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--token-min-interval-ms', '0'], {
    env: { ...process.env, ESIGN_ADMIN_EMAIL: EMAIL, ESIGN_ADMIN_PASSWORD: PASSWORD, ESIGN_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('esign did not start within 60 s')), 60_000);
    child.on('exit', (code) => fail(new Error(`esign exited with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const url = line.match(/^esign listening on (\S+)/)?.[1];
      if (url) {
        clearTimeout(timer);
        ok([child, url.replace('://localhost', '://127.0.0.1')]);
      }
    });
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'esign-js-host-'));
  execFileSync(BIN, ['engine', 'export', join(dir, 'engine.wasm')], { stdio: 'ignore', timeout: 60_000 });
  await transpile(join(dir, 'engine.wasm'), join(dir, 'jco'));
  [server, base] = await startRust(join(dir, 'data'));
  // The same settings as that server, so links in answers match.
  js = new Host(join(dir, 'jco'), { ...defaultSettings(), baseUrl: base, tokenMinIntervalMs: 0n });
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

/** One request to each host: `[rust, js]`, each `{ status, json }`. `path` is one path,
 *  or a pair when it differs per host (it holds each host's own document id). */
async function both(method, path, { token = [null, null], body } = {}) {
  const [rustPath, jsPath] = Array.isArray(path) ? path : [path, path];
  const headers = (t) => [
    ...AGENT,
    ...(body === undefined ? [] : [['content-type', 'application/json']]),
    ...(t ? [['authorization', `Bearer ${t}`]] : []),
  ];
  const text = body === undefined ? undefined : JSON.stringify(body);
  const r = await fetch(base + rustPath, { method, headers: headers(token[0]), body: text, signal: AbortSignal.timeout(30_000) });
  const rust = { status: r.status, json: parse(await r.text()) };
  const [p, query = ''] = jsPath.split('?');
  const j = await js.request(method, p, { query, headers: headers(token[1]), body: text ?? '' });
  return [rust, { status: j.status, json: parse(j.body.toString()) }];
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The answer with what differs between two runs replaced by placeholders. */
function normalize(value, key = '') {
  if (Array.isArray(value)) return value.map((v) => normalize(v, key));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, k)]));
  }
  if (key === 'unique_id') return '<unique-id>'; // a random number per document
  if (typeof value !== 'string') return value;
  if (/token$/.test(key)) return '<token>';
  return value
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g, '<time>')
    .replace(/\b[0-9a-f]{64}\b/g, '<sha256>')
    .replace(/(?<![\w-])[\w-]{43}(?![\w-])/g, '<token>') // 32 random bytes, base64url
    .replace(/\b(evt_)?[a-z2-7]{16}\b/g, '$1<id>');
}

/** Asserts both hosts answered alike and returns the two answers. */
async function same(what, method, path, opts) {
  const [rust, js] = await both(method, path, opts);
  assert.deepEqual(
    { status: js.status, body: normalize(js.json) },
    { status: rust.status, body: normalize(rust.json) },
    `${what}: the JS host (actual) and the Rust host (expected) differ`,
  );
  return [rust.json, js.json];
}

/** Polls the Rust host's status (every 50 ms, at most 30 s) until it is `want`. */
async function rustStatus(token, id, want) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await fetch(`${base}/v1/documents/${id}/status`, { headers: { authorization: `Bearer ${token}` } });
    const body = await r.json();
    if (body.status === want) return;
    assert.ok(Date.now() < deadline, `the Rust host's document ${id} did not become ${want}: ${JSON.stringify(body)}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

/** A two-page PDF (A4 and US Letter) both hosts import. */
async function pdf() {
  const doc = await PDFDocument.create();
  doc.addPage([595.28, 841.89]).drawText('Page one', { x: 50, y: 700 });
  doc.addPage([612, 792]).drawText('Page two', { x: 50, y: 700 });
  return Buffer.from(await doc.save());
}

test('bootstrap, log in, create, import, send, read status and events', async () => {
  await same('GET /v1/test without a token', 'GET', '/v1/test');
  const [rustLogin, jsLogin] = await same('log in', 'POST', '/v1/auth', { body: { email: EMAIL, password: PASSWORD } });
  const token = [rustLogin.access_token, jsLogin.access_token];
  await same('GET /v1/test', 'GET', '/v1/test', { token });
  await same('a wrong password', 'POST', '/v1/auth', { body: { email: EMAIL, password: 'wrong-password-1' } });
  await same('a bad body', 'POST', '/v1/documents', { token, body: { name: 7 } });

  const body = {
    name: 'Consulting agreement',
    file_content: (await pdf()).toString('base64'),
    file_name: 'agreement.pdf',
    recipients: [{ email: 'signer@example.com', first_name: 'Sam', last_name: 'Signer', role: 'signer' }],
  };
  const [rustDoc, jsDoc] = await same('create', 'POST', '/v1/documents', { token, body });
  assert.equal(jsDoc.status, 'importing');
  const ids = [rustDoc.id, jsDoc.id];
  const path = (suffix = '') => ids.map((id) => `/v1/documents/${id}${suffix}`);

  // The import job: the JS host runs due jobs when told; the Rust host on its own.
  assert.equal(await js.runJobs(), 1);
  await rustStatus(token[0], ids[0], 'draft');
  await same('status after the import', 'GET', path('/status'), { token });
  const [detail] = await same('the document after the import', 'GET', path(), { token });
  assert.equal(detail.file_count ?? detail.files?.length ?? 1, 1, JSON.stringify(detail));
  // The page sizes the JS host read with pdf-lib, against lopdf's.
  const [pages] = await same('pages after the import', 'GET', path('/pages'), { token });
  assert.equal(pages.page_count, 2, JSON.stringify(pages));
  await same('recipients', 'GET', path('/recipients'), { token });

  await same('send', 'POST', path('/send'), { token, body: {} });
  assert.ok((await js.runJobs()) >= 1, 'the send schedules the render job');
  await rustStatus(token[0], ids[0], 'sent');
  await same('status after sending', 'GET', path('/status'), { token });
  const [log] = await same('the audit log', 'GET', path('/log'), { token });
  assert.deepEqual(
    log.map((e) => e.event).filter(Boolean),
    ['document.created', 'document.imported', 'document.sent'],
  );
  // The effects the engine recorded in the JS host: the events and the recipient's mail.
  assert.deepEqual(js.outbox.events.map((e) => e.kind), ['document.created', 'document.imported', 'document.sent']);
  assert.ok(js.outbox.mails.some((m) => m.to === 'signer@example.com'), JSON.stringify(js.outbox.mails));
  assert.deepEqual(js.errors, []);
  assert.deepEqual(js.deadJobs, []);
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
