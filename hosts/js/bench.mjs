// `just bench`: one engine call (`GET /v1/test` with a valid token) in Node through jco,
// a fresh instance per call as in the Rust host, split into instantiate and call. Compare
// with `engine_call`, which measures the same call in the Rust host.
//
// Then the file work through jco's formats component: a 20-page document goes the whole
// way in the JS host, and its three work orders (import, render with page images, render
// with page images and the seal) are done again ROUNDS times each. With
// FORMATS_BENCH_ORDERS=DIR the orders and their blobs are written there (serde's shape),
// for `formats_bench`, which does the same orders natively and in wasmtime.
//
//     ESIGN_BIN=target/release/esign ESIGN_SIGNING_DIR=DATA/signing \
//         node hosts/js/bench.mjs [CALLS] [ROUNDS]

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Host, transpile, defaultSettings, toSerde } from './host.mjs';

const here = new URL('.', import.meta.url).pathname;
const bin = process.env.ESIGN_BIN ?? resolve(here, '../../target/release/esign');
const calls = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'esign-js-bench-'));
try {
  execFileSync(bin, ['engine', 'export', join(dir, 'engine.wasm')], { stdio: 'ignore' });
  await transpile(join(dir, 'engine.wasm'), join(dir, 'jco'));
  const host = new Host(join(dir, 'jco'), { ...defaultSettings(), tokenMinIntervalMs: 0n });
  const json = [['content-type', 'application/json']];
  const account = JSON.stringify({ email: 'bench@example.com', password: 'bench-password' });
  await host.request('POST', '/admin/bootstrap', { origin: 'admin', headers: json, body: account });
  const login = await host.request('POST', '/v1/auth', { headers: json, body: account });
  const token = JSON.parse(login.body).access_token;
  const req = { headers: [['authorization', `Bearer ${token}`]] };
  const timed = async () => {
    const t = await host.timedRequest('GET', '/v1/test', req);
    if (t.status !== 200) throw new Error(`GET /v1/test answered ${t.status}`);
    return t;
  };
  for (let i = 0; i < Math.min(200, calls); i++) await timed(); // warm-up: JIT tiers
  const inst = [];
  const call = [];
  for (let i = 0; i < calls; i++) {
    const t = await timed();
    inst.push(t.instantiateUs);
    call.push(t.callUs);
  }
  const stats = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const mean = s.reduce((a, b) => a + b, 0) / s.length;
    return `mean ${mean.toFixed(1)} µs, p50 ${s[s.length >> 1].toFixed(1)} µs, p99 ${s[Math.floor(s.length * 0.99)].toFixed(1)} µs`;
  };
  const total = inst.map((x, i) => x + call[i]);
  console.log(`== engine call through jco in Node ${process.version} (${calls} calls, a fresh instance each)`);
  console.log(`instantiate:              ${stats(inst)}`);
  console.log(`GET /v1/test, the call:   ${stats(call)}`);
  console.log(`instantiate + call:       ${stats(total)}`);
  if (process.env.ESIGN_SIGNING_DIR) await formats();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** A `pages`-page PDF with some text on each page. */
async function samplePdf(pages) {
  const { PDFDocument } = await import('@cantoo/pdf-lib');
  const doc = await PDFDocument.create();
  for (let i = 1; i <= pages; i++) {
    const page = doc.addPage([595.28, 841.89]);
    for (let line = 0; line < 40; line++) {
      page.drawText(`Page ${i}, clause ${line + 1}: the parties agree to the terms set out here.`, { x: 50, y: 780 - line * 18, size: 10 });
    }
  }
  return Buffer.from(await doc.save());
}

async function formats() {
  execFileSync(bin, ['engine', 'export', '--formats', join(dir, 'formats.wasm')], { stdio: 'ignore' });
  await transpile(join(dir, 'formats.wasm'), join(dir, 'jco-formats'), 'formats');
  const keys = process.env.ESIGN_SIGNING_DIR;
  const host = new Host(join(dir, 'jco'), { ...defaultSettings(), tokenMinIntervalMs: 0n }, {
    formatsDir: join(dir, 'jco-formats'),
    signing: { keyPem: readFileSync(join(keys, 'key.pem'), 'utf8'), certPem: readFileSync(join(keys, 'cert.pem'), 'utf8') },
  });
  const orders = [];
  host.onWork = ({ order, nowMs }) => orders.push({ order, nowMs, blobs: new Map(host.blobs) });
  const json = [['content-type', 'application/json']];
  const account = JSON.stringify({ email: 'bench@example.com', password: 'bench-password' });
  await host.request('POST', '/admin/bootstrap', { origin: 'admin', headers: json, body: account });
  const token = JSON.parse((await host.request('POST', '/v1/auth', { headers: json, body: account })).body).access_token;
  const auth = [...json, ['authorization', `Bearer ${token}`]];
  const ask = async (method, path, body) => {
    const r = await host.request(method, path, { headers: auth, body: JSON.stringify(body ?? {}) });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body}`);
    return JSON.parse(r.body);
  };
  const doc = await ask('POST', '/v1/documents', {
    name: 'Twenty pages',
    file_content: (await samplePdf(20)).toString('base64'),
    file_name: 'twenty.pdf',
    recipients: [{ email: 'signer@example.com', first_name: 'Sam', last_name: 'Signer', role: 'signer' }],
  });
  await host.runJobs();
  await ask('POST', `/v1/documents/${doc.id}/send`);
  await host.runJobs();
  const secret = (await ask('GET', `/v1/documents/${doc.id}`)).recipients[0].document_url.split('/').pop();
  await ask('POST', `/v1/recipient/${secret}/sign`, { signature: { type: 'typed', name: 'Sam Signer' } });
  await host.runJobs();
  const sealed = await ask('GET', `/v1/documents/${doc.id}`);
  if (sealed.evidence?.status !== 'sealed') throw new Error(`not sealed: ${JSON.stringify(sealed.evidence)}`);
  host.onWork = null;

  console.log();
  console.log(`== file work through jco's formats component (a 20-page document, ${rounds} rounds each, a fresh instance each)`);
  const names = ['import', 'render + page images', 'render + page images + seal'];
  for (const [i, { order, nowMs, blobs }] of orders.entries()) {
    host.clock = nowMs;
    const ms = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = process.hrtime.bigint();
      await host.perform(order);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((a, b) => a - b);
    console.log(`${(names[i] ?? order.tag).padEnd(30)} mean ${(ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)} ms, p50 ${ms[ms.length >> 1].toFixed(1)} ms`);
    if (process.env.FORMATS_BENCH_ORDERS) {
      const at = join(process.env.FORMATS_BENCH_ORDERS, `${i + 1}`);
      mkdirSync(join(at, 'blobs'), { recursive: true });
      for (const [id, bytes] of blobs) writeFileSync(join(at, 'blobs', id), bytes);
      writeFileSync(join(at, 'order.json'), JSON.stringify(toSerde(order)));
      writeFileSync(join(at, 'name'), names[i] ?? order.tag);
      writeFileSync(join(at, 'now-ms'), String(nowMs));
    }
  }
}
