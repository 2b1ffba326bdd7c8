// What the suites that compare another host with the Rust host share (hosts/js and
// hosts/workers): starting `esign serve`, sending the same request to both hosts, and
// comparing the answers with what differs between two runs (ids, tokens, hashes,
// times) replaced by placeholders.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { PDFDocument } from '@cantoo/pdf-lib';

export const BIN = process.env.ESIGN_BIN ?? resolve(import.meta.dirname, '../../target/debug/esign');
export const EMAIL = 'admin@example.com';
export const PASSWORD = 'admin-password-1';
export const AGENT = [['user-agent', 'esign-host-comparison']];

/** Starts `esign serve` on a free loopback port with the admin above; resolves (within
 *  60 s) to `[child, url]`. */
export function startRust(dataDir, extraEnv = {}) {
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--token-min-interval-ms', '0'], {
    env: { ...process.env, ESIGN_ADMIN_EMAIL: EMAIL, ESIGN_ADMIN_PASSWORD: PASSWORD, ESIGN_LOG: 'warn', ...extraEnv },
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

export function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The answer with what differs between two runs replaced by placeholders. */
export function normalize(value, key = '') {
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
    .replace(/\b(evt_)?[a-z2-7]{16}\b/g, '$1<id>')
    .replace(/http:\/\/127\.0\.0\.1:\d+/g, '<base-url>');
}

/** A comparison of the Rust host at `base` with another host: `other(method, path,
 *  { query, headers, body })` answers `{ status, body }` (body bytes). */
export function comparison(base, other) {
  /** One request to each host: `[rust, other]`, each `{ status, json }`. `path` is one
   *  path, or a pair when it differs per host (it holds each host's own ids). */
  async function both(method, path, { token = [null, null], body } = {}) {
    const [rustPath, otherPath] = Array.isArray(path) ? path : [path, path];
    const headers = (t) => [
      ...AGENT,
      ...(body === undefined ? [] : [['content-type', 'application/json']]),
      ...(t ? [['authorization', `Bearer ${t}`]] : []),
    ];
    const text = body === undefined ? undefined : JSON.stringify(body);
    const r = await fetch(base + rustPath, { method, headers: headers(token[0]), body: text, signal: AbortSignal.timeout(30_000) });
    const rust = { status: r.status, json: parse(await r.text()) };
    const [p, query = ''] = otherPath.split('?');
    const o = await other(method, p, { query, headers: headers(token[1]), body: text ?? '' });
    return [rust, { status: o.status, json: parse(Buffer.from(o.body).toString()) }];
  }

  /** Asserts both hosts answered alike and returns the two answers. */
  async function same(what, method, path, opts) {
    const [rust, mine] = await both(method, path, opts);
    assert.deepEqual(
      { status: mine.status, body: normalize(mine.json) },
      { status: rust.status, body: normalize(rust.json) },
      `${what}: the other host (actual) and the Rust host (expected) differ`,
    );
    return [rust.json, mine.json];
  }

  /** Polls the Rust host's document (every 50 ms, at most 60 s) until `done(detail)`. */
  async function rustWait(token, id, what, done) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await fetch(`${base}/v1/documents/${id}`, { headers: { authorization: `Bearer ${token}` } });
      const detail = await r.json();
      if (done(detail)) return detail;
      assert.ok(Date.now() < deadline, `the Rust host's document ${id}: ${what} did not happen: ${JSON.stringify(detail)}`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }

  /** Logs in on both hosts: the two tokens. */
  async function login() {
    const [rust, other] = await same('log in', 'POST', '/v1/auth', { body: { email: EMAIL, password: PASSWORD } });
    return [rust.access_token, other.access_token];
  }

  /** The opening of every comparison: anonymous and authenticated `GET /v1/test`, a
   *  login, a wrong password and a bad body answered alike; the two tokens. */
  async function opening() {
    await same('GET /v1/test without a token', 'GET', '/v1/test');
    const token = await login();
    await same('GET /v1/test', 'GET', '/v1/test', { token });
    await same('a wrong password', 'POST', '/v1/auth', { body: { email: EMAIL, password: 'wrong-password-1' } });
    await same('a bad body', 'POST', '/v1/documents', { token, body: { name: 7 } });
    return token;
  }

  return { both, same, rustWait, login, opening };
}

/** A document from `pdf()` for one signer, as JSON for `POST /v1/documents`. */
export async function signerDocument(name, fileName) {
  return {
    name,
    file_content: (await pdf()).toString('base64'),
    file_name: fileName,
    recipients: [{ email: 'signer@example.com', first_name: 'Sam', last_name: 'Signer', role: 'signer' }],
  };
}

/** A two-page PDF (A4 and US Letter). */
export async function pdf() {
  const doc = await PDFDocument.create();
  doc.addPage([595.28, 841.89]).drawText('Page one', { x: 50, y: 700 });
  doc.addPage([612, 792]).drawText('Page two', { x: 50, y: 700 });
  return Buffer.from(await doc.save());
}

/** The recipient secret in a document's `document_url`. */
export const secretOf = (detail, i = 0) => detail.recipients[i].document_url.split('/').pop();
