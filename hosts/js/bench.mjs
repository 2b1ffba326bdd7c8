// `just bench`: one engine call (`GET /v1/test` with a valid token) in Node through jco,
// a fresh instance per call as in the Rust host, split into instantiate and call. Compare
// with `engine_call`, which measures the same call in the Rust host.
//
//     ESIGN_BIN=target/release/esign node hosts/js/bench.mjs [CALLS]

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Host, transpile, defaultSettings } from './host.mjs';

const here = new URL('.', import.meta.url).pathname;
const bin = process.env.ESIGN_BIN ?? resolve(here, '../../target/release/esign');
const calls = Number(process.argv[2] ?? 2000);
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
} finally {
  rmSync(dir, { recursive: true, force: true });
}
