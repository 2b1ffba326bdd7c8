// `just bench` (bench/run.sh), against a running esign on miniflare (URL) and the Rust
// host (RUST_URL), both with the admin bench@example.com / bench-password:
//
// 1. a document's life, wall time: created from a 20-page PDF, imported, sent, signed
//    by its recipient, sealed; on each host;
// 2. the CPU time of one engine call (GET /v1/test) inside the Durable Object: N calls
//    in one invocation with no I/O between them (needs ESIGN_BENCH on the Worker).
//
//     node hosts/workers/bench.mjs URL RUST_URL [N]

import { PDFDocument } from '@cantoo/pdf-lib';

const [url, rustUrl, n = '500'] = process.argv.slice(2);
const account = { email: 'bench@example.com', password: 'bench-password' };

async function api(base, token, method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(120_000),
  });
  const json = await r.json();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

async function twentyPages() {
  const doc = await PDFDocument.create();
  for (let i = 1; i <= 20; i++) {
    const page = doc.addPage([595.28, 841.89]);
    for (let line = 0; line < 40; line++) page.drawText(`Page ${i}, clause ${line + 1}: the parties agree.`, { x: 50, y: 780 - line * 18, size: 10 });
  }
  return Buffer.from(await doc.save()).toString('base64');
}

async function life(base, pdf) {
  const token = (await api(base, null, 'POST', '/v1/auth', account)).access_token;
  const wait = async (id, done) => {
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; await new Promise((ok) => setTimeout(ok, 20))) {
      const d = await api(base, token, 'GET', `/v1/documents/${id}`);
      if (done(d)) return d;
    }
    throw new Error(`document ${id} did not get there in 300 s`);
  };
  const steps = [];
  let t = performance.now();
  const lap = (name) => {
    const now = performance.now();
    steps.push(`${name} ${(now - t).toFixed(0)} ms`);
    t = now;
  };
  const t0 = t;
  const { id } = await api(base, token, 'POST', '/v1/documents', {
    name: 'Bench', file_content: pdf, file_name: 'twenty.pdf',
    recipients: [{ email: 'signer@example.com', first_name: 'Sam', role: 'signer' }],
  });
  await wait(id, (d) => d.status === 'draft');
  lap('create + import');
  await api(base, token, 'POST', `/v1/documents/${id}/send`, {});
  const sent = await wait(id, (d) => d.status === 'sent');
  lap('send + render');
  const secret = sent.recipients[0].document_url.split('/').pop();
  await api(base, null, 'POST', `/v1/recipient/${secret}/sign`, { signature: { type: 'typed', name: 'Sam Signer' } });
  await wait(id, (d) => d.evidence?.status === 'sealed');
  lap('sign + seal');
  return `${(performance.now() - t0).toFixed(0)} ms (${steps.join(', ')})`;
}

const pdf = await twentyPages();
console.log('== a 20-page document created, imported, sent, signed and sealed (wall time)');
console.log(`Rust host:            ${await life(rustUrl, pdf)}`);
console.log(`Workers (miniflare):  ${await life(url, pdf)}`);
const token = (await api(url, null, 'POST', '/v1/auth', account)).access_token;
await fetch(`${url}/_esign/bench/calls?n=20`, { headers: { authorization: `Bearer ${token}` } }); // warm-up
const t0 = performance.now();
const r = await (await fetch(`${url}/_esign/bench/calls?n=${n}`, { headers: { authorization: `Bearer ${token}` } })).json();
const us = ((performance.now() - t0) * 1000) / r.calls;
if (r.ok !== r.calls) throw new Error(`only ${r.ok} of ${r.calls} calls answered 200`);
console.log(`== one engine call inside the Durable Object (GET /v1/test, fresh instance, own transaction): ${us.toFixed(0)} µs (${r.calls} in one invocation)`);
