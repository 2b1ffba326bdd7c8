// esign on Cloudflare Workers. This module is the Worker: it takes the HTTP requests
// and hands each to the Durable Object that holds the state (object.mjs), computing
// passwords outside it (passwords.mjs); and it is the Queue consumer that does the file
// work of jobs (formats.mjs) and gives the outcome back to the object.
//
// Bindings (wrangler.toml): ENGINE (the Durable Object class `Engine`, SQLite-backed),
// WORK (a Queue this Worker produces to and consumes). Variables and secrets: docs/workers.md,
// "Deploy to Cloudflare Workers".

import { answer } from './passwords.mjs';
import { perform } from './formats.mjs';
import { verifySigned } from './outbound.mjs';
import { engineRequest, errorResponse, toResponse } from './http.mjs';

export { Engine } from './object.mjs';

/** The one object that holds the service's state. */
const engine = (env) => env.ENGINE.get(env.ENGINE.idFromName('esign'));

/** `handle` until it answers: each round computes the passwords the call asked for. */
async function handle(stub, req, opts) {
  let answers = [];
  for (let round = 0; round < 5; round++) {
    const r = await stub.handle(req, answers, opts);
    if (!r.asks) return r;
    answers = [...answers, ...(await answer(r.asks))];
  }
  throw new Error('the call kept asking for passwords');
}

/** The first-run bootstrap, as `esign serve` does it: ESIGN_ADMIN_EMAIL,
 *  ESIGN_ADMIN_PASSWORD (else one is generated and logged) and ESIGN_ADMIN_ENTITY. */
async function bootstrap(stub, env, opts) {
  const body = { email: env.ESIGN_ADMIN_EMAIL || 'admin@esign.local' };
  if (env.ESIGN_ADMIN_PASSWORD) body.password = env.ESIGN_ADMIN_PASSWORD;
  if (env.ESIGN_ADMIN_ENTITY) body.entity_name = env.ESIGN_ADMIN_ENTITY;
  const req = {
    method: 'POST',
    path: '/admin/bootstrap',
    query: '',
    headers: [['content-type', 'application/json']],
    body: new TextEncoder().encode(JSON.stringify(body)),
    parts: [],
    origin: 'admin',
    remoteAddr: '0.0.0.0',
  };
  const { response } = await handle(stub, req, opts);
  const text = new TextDecoder().decode(response.body);
  if (response.status < 300) console.log(`first run: ${text}`);
  else console.error(`first-run setup failed (${response.status}): ${text}`);
}

/** Test faults from `x-esign-test-fault` (only with ESIGN_TEST_FAULTS set). */
function faults(request, env) {
  if (!env.ESIGN_TEST_FAULTS) return {};
  const out = {};
  for (const v of (request.headers.get('x-esign-test-fault') ?? '').split(',').map((s) => s.trim())) {
    if (v.startsWith('trap-on-put=')) out.trapOnPut = Number(v.slice('trap-on-put='.length));
    if (v === 'blobs-unavailable') out.blobsUnavailable = true;
  }
  return out;
}

/** `POST /_esign/mail/bounced`: the mail provider's notice of a hard bounce, `{tag,
 *  reason}`, signed per Standard Webhooks with ESIGN_MAIL_WEBHOOK_SECRET. */
async function mailBounced(request, env) {
  if (!env.ESIGN_MAIL_WEBHOOK_SECRET) return errorResponse(404, 'not_found', 'no such route');
  const body = await request.text();
  if (!(await verifySigned(env.ESIGN_MAIL_WEBHOOK_SECRET, request.headers, body))) {
    return errorResponse(401, 'invalid_signature', 'the notice is not signed with the mail webhook secret');
  }
  let notice;
  try {
    notice = JSON.parse(body);
  } catch {
    return errorResponse(400, 'invalid_json', 'the body is not JSON');
  }
  if (typeof notice?.tag !== 'string' || !notice.tag || typeof notice.reason !== 'string') {
    return errorResponse(400, 'invalid_request', 'expected {"tag": "...", "reason": "..."}');
  }
  await engine(env).mailBounced(notice.tag, notice.reason);
  return new Response(null, { status: 204 });
}

/** One work order from the queue: done here, statelessly, and handed back. */
async function work(env, { job, lease }) {
  const stub = engine(env);
  const task = await stub.workOrder(job, lease);
  if (!task) return; // done already, or sent again under another lease
  const { outcome, made, warnings } = perform(task.order, task.nowMs, task);
  for (const w of warnings) console.warn(`work order ${job}: ${w}`);
  await stub.finishWork(job, lease, outcome, made);
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/_esign/mail/bounced' && request.method === 'POST') return mailBounced(request, env);
    if (url.pathname === '/_esign/bench/calls' && env.ESIGN_BENCH) {
      // `just bench`: N calls of GET /v1/test with this request's token inside the object.
      const req = { ...(await engineRequest(new Request(new URL('/v1/test', url), { headers: request.headers }), env)) };
      const n = Math.min(10_000, Number(url.searchParams.get('n') ?? 100));
      return Response.json({ calls: n, ok: await engine(env).benchCalls(req, n) });
    }
    const req = await engineRequest(request, env);
    if (req instanceof Response) return req;
    const stub = engine(env);
    const opts = { origin: url.origin, faults: faults(request, env) };
    let r = await handle(stub, req, opts);
    if (r.firstRun) {
      await bootstrap(stub, env, { origin: url.origin });
      r = await handle(stub, req, opts);
    }
    return toResponse(r.response);
  },

  async queue(batch, env) {
    for (const message of batch.messages) {
      try {
        await work(env, message.body);
        message.ack();
      } catch (e) {
        console.error(`work order ${message.body?.job}: ${e?.stack ?? e}`);
        message.retry();
      }
    }
  },
};
