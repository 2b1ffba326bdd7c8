// The Durable Object that holds esign's state: one object for the whole service (the
// engine's keys are global: wit/README.md), its SQLite storage the store.
//
// Every engine call runs on a fresh instance inside one `transactionSync`: the imports
// write straight to SQLite (imports.mjs), so the call commits whole or, when it throws
// (a trap, a 503, a password to compute outside), not at all. The object's alarm,
// armed at the earliest due row, runs the background work: due jobs (those with a work
// order are leased to the Queue consumer, which does the file work and hands the
// outcome back through `finishWork`; an expired lease sends the job again), webhook
// deliveries, mail and text messages (outbound.mjs).

import { DurableObject } from 'cloudflare:workers';
import { instantiate } from '../build/engine/engine.js';
import { engineCores } from '../build/cores.mjs';
import { SCHEMA, getBlob, hostJob, meta, migrate, putBlob, setMeta } from './tables.mjs';
import { engineImports } from './imports.mjs';
import { Answers, NeedPasswords, answer } from './passwords.mjs';
import { blobsOf, checkPdf, generateSigningKey } from './formats.mjs';
import { deliverWebhooks, sendMail } from './outbound.mjs';
import { settings } from './settings.mjs';
import { hex, pemBlocks, randomBytes, randomId, sha256Hex } from './bytes.mjs';

/** How long the consumer may take over a work order before it is sent again. */
const DEFAULT_LEASE_MS = 5 * 60_000;
/** Jobs started per alarm, at most (the alarm comes again at once when more are due). */
const JOBS_PER_ALARM = 32;

class Rollback extends Error {
  constructor(value) {
    super('rolled back');
    this.value = value;
  }
}

/** A 500 like the Rust host's: nothing was changed, a trace id to quote. */
function internalError(cause) {
  const traceId = randomId();
  console.error(`trace_id ${traceId}: the engine call failed: ${cause?.stack ?? cause}`);
  const body = {
    error: 'internal_error',
    description: 'an unexpected error occurred; nothing was changed. Quote the trace_id when you report it',
    status: 500,
    trace_id: traceId,
  };
  return { status: 500, headers: [['content-type', 'application/json']], body: new TextEncoder().encode(JSON.stringify(body)) };
}

/** `imports` also under their unversioned names, which jco's glue looks up. */
function unversioned(imports) {
  for (const name of Object.keys(imports)) imports[name.replace(/@[^@/]*$/, '')] = imports[name];
  return imports;
}

export class Engine extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
    migrate(this.sql);
    this.signing = null;
    this.linkKey = this.#loadLinkKey();
    ctx.blockConcurrencyWhile(() => this.#loadSigningKey());
  }

  /** The key recipient links are derived from (`settings.link-key`): ESIGN_LINK_KEY (a
   *  Worker secret) when set, so that the object's storage holds only a nonce per link;
   *  else one generated here at first start and kept in `meta`, beside the state (a
   *  copy of the storage then opens the links too, which the log says). */
  #loadLinkKey() {
    if (this.env.ESIGN_LINK_KEY && this.env.ESIGN_LINK_KEY.trim()) return this.env.ESIGN_LINK_KEY.trim();
    let key = meta(this.sql, 'link_key');
    if (!key) {
      key = hex(randomBytes(32));
      setMeta(this.sql, 'link_key', key);
      console.warn('generated the recipient link key into the Durable Object (no ESIGN_LINK_KEY): a copy of its storage can open every signing link');
    }
    return key;
  }

  /** The sealing key: ESIGN_SIGNING_KEY and ESIGN_SIGNING_CERT (PEM; the key PKCS #8)
   *  when set, else the one generated here at first start and kept in `meta`. */
  async #loadSigningKey() {
    let secret;
    let certPem;
    if (this.env.ESIGN_SIGNING_KEY && this.env.ESIGN_SIGNING_CERT) {
      const [der] = pemBlocks(this.env.ESIGN_SIGNING_KEY, 'PRIVATE KEY');
      if (!der) throw new Error('ESIGN_SIGNING_KEY must be a PKCS #8 PEM key (BEGIN PRIVATE KEY)');
      const key = await crypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
      const jwk = await crypto.subtle.exportKey('jwk', key);
      secret = Uint8Array.from(atob(jwk.d.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
      certPem = this.env.ESIGN_SIGNING_CERT;
    } else if (meta(this.sql, 'signing_secret')) {
      secret = Uint8Array.from(meta(this.sql, 'signing_secret').match(/../g), (h) => parseInt(h, 16));
      certPem = meta(this.sql, 'signing_cert');
    } else {
      secret = randomBytes(32);
      [, certPem] = generateSigningKey(secret, Date.now());
      this.ctx.storage.transactionSync(() => {
        setMeta(this.sql, 'signing_secret', hex(secret));
        setMeta(this.sql, 'signing_cert', certPem);
      });
      console.log('generated a sealing key and a self-signed certificate (kept in the Durable Object)');
    }
    const chain = pemBlocks(certPem, 'CERTIFICATE');
    this.signing = { secret, chain, certPem, certificateSha256: chain.length ? sha256Hex(chain[0]) : '' };
  }

  #settings() {
    const base = this.env.ESIGN_BASE_URL || meta(this.sql, 'base_url') || 'http://127.0.0.1:8787';
    return settings(this.env, base, this.signing?.certPem ?? '', this.linkKey);
  }

  /** One engine call on a fresh instance in one transaction, committed when `keep`
   *  says so of the result. Throws what the call threw (rolled back). */
  #call(run, keep, answers, faults = {}) {
    const cx = {
      sql: this.sql,
      settings: this.#settings(),
      answers,
      checkPdf: (pdf) => checkPdf(pdf, this.signing?.certificateSha256 ?? ''),
      now: Date.now(),
      faults,
    };
    try {
      return this.ctx.storage.transactionSync(() => {
        const exports = instantiate((name) => engineCores[name], unversioned(engineImports(cx)));
        const result = run(exports);
        if (!keep(result)) throw new Rollback(result);
        return result;
      });
    } catch (e) {
      if (e instanceof Rollback) return e.value;
      throw e;
    }
  }

  /** Answers one request (the WIT's `request`; `answers` what the Worker computed for
   *  passwords so far). Returns `{ response }`, `{ asks }` (passwords to compute, then
   *  call again) or `{ firstRun: true }` (bootstrap first). */
  async handle(req, answers = [], { origin, faults } = {}) {
    if (origin && !this.env.ESIGN_BASE_URL && meta(this.sql, 'base_url') !== origin) {
      setMeta(this.sql, 'base_url', origin);
    }
    const bootstrap = req.origin === 'admin' && req.path === '/admin/bootstrap';
    const done = meta(this.sql, 'first_run');
    if (!bootstrap && !done) return { firstRun: true };
    // Two first requests at once: the second bootstrap has nothing to do.
    if (bootstrap && done) return { response: { status: 204, headers: [], body: new Uint8Array() } };
    let response;
    try {
      response = this.#call((e) => e.handle(req), (r) => r.status !== 503, new Answers(answers), faults);
    } catch (e) {
      if (e instanceof NeedPasswords) return { asks: e.asks };
      response = internalError(e);
    }
    if (bootstrap) setMeta(this.sql, 'first_run', String(Date.now()));
    await this.#arm();
    return { response: { status: response.status, headers: response.headers, body: response.body } };
  }

  /** Arms the alarm at the earliest due row, if any. */
  async #arm() {
    const next = this.sql
      .exec(
        `SELECT min(t) AS t FROM (
           SELECT min(CASE WHEN lease IS NULL THEN run_at ELSE max(run_at, lease_until) END) AS t FROM job
           UNION ALL SELECT min(due) FROM delivery
           UNION ALL SELECT min(due) FROM mail)`,
      )
      .one().t;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  async alarm() {
    const now = Date.now();
    const due = this.sql
      .exec(
        'SELECT * FROM job WHERE run_at <= ? AND (lease IS NULL OR lease_until <= ?) ORDER BY run_at LIMIT ?',
        now, now, JOBS_PER_ALARM,
      )
      .toArray();
    for (const job of due) {
      if (job.work) await this.#lease(job);
      else await this.#runJob(job, undefined, []);
    }
    await deliverWebhooks(this.ctx, this.env);
    await sendMail(this.ctx, this.env);
    await this.#arm();
  }

  /** Leases a job with a work order to the Queue consumer. */
  async #lease(job) {
    const lease = randomId();
    const leaseMs = Number(this.env.ESIGN_WORK_LEASE_MS || DEFAULT_LEASE_MS);
    this.sql.exec('UPDATE job SET lease = ?, lease_until = ? WHERE id = ?', lease, Date.now() + leaseMs, job.id);
    try {
      await this.env.WORK.send({ job: job.id, lease });
    } catch (e) {
      console.error(`sending work order ${job.id} to the queue failed (sent again when its lease ends): ${e}`);
    }
  }

  /** Runs `job` with its work's `outcome`, writing the blobs `made` in the same
   *  transaction; records what the engine answered. */
  async #runJob(job, outcome, made) {
    const row = { id: job.id, kind: job.kind, payload: new Uint8Array(job.payload), attempt: job.attempt, outcome };
    let answers = [];
    for (let round = 0; round < 4; round++) {
      try {
        this.#call(
          (e) => {
            for (const [id, bytes] of made) putBlob(this.sql, id, bytes);
            const result = e.runJob(row);
            this.#record(job, result);
            return result;
          },
          () => true,
          new Answers(answers),
        );
        return;
      } catch (e) {
        if (e instanceof NeedPasswords) {
          // Rare in a job; computed here, holding the object (there is no Worker
          // invocation to hand them to).
          answers = [...answers, ...(await answer(e.asks, true))];
          continue;
        }
        // Rolled back; tried again later, as the Rust host does with a trapped job.
        console.error(`job ${job.kind} ${job.id} trapped (attempt ${job.attempt}): ${e?.stack ?? e}`);
        this.sql.exec('UPDATE job SET attempt = attempt + 1, run_at = ?, lease = NULL WHERE id = ?', Date.now() + 60_000, job.id);
        return;
      }
    }
  }

  #record(job, result) {
    const sql = this.sql;
    if (result.tag === 'retry-at') {
      sql.exec('UPDATE job SET attempt = attempt + 1, run_at = ?, lease = NULL WHERE id = ?', Number(result.val), job.id);
      return;
    }
    sql.exec('DELETE FROM job WHERE id = ?', job.id);
    if (result.tag === 'failed') {
      console.error(`job ${job.kind} ${job.id} failed: ${result.val}`);
      sql.exec('INSERT INTO dead_job (id, kind, payload, reason, at) VALUES (?, ?, ?, ?, ?)', job.id, job.kind, job.payload, result.val, Date.now());
    }
  }

  /** The Queue consumer asks for its order: the order, the blobs it reads, the key and
   *  the time; `null` when the lease is no longer this one (done, or sent again). */
  workOrder(jobId, lease) {
    const job = this.sql.exec('SELECT * FROM job WHERE id = ?', jobId).toArray()[0];
    if (!job || job.lease !== lease) return null;
    const order = JSON.parse(job.work);
    const blobs = new Map();
    for (const id of blobsOf(order)) {
      const bytes = getBlob(this.sql, id);
      if (bytes) blobs.set(id, bytes);
    }
    const signing = this.signing && { secret: this.signing.secret, chain: this.signing.chain };
    return { order, blobs, signing, nowMs: Date.now() };
  }

  /** The consumer's outcome: run with the job, its blobs in the same transaction. False
   *  when the lease ended meanwhile (the job was sent again; this result is dropped). */
  async finishWork(jobId, lease, outcome, made) {
    const job = this.sql.exec('SELECT * FROM job WHERE id = ?', jobId).toArray()[0];
    if (!job || job.lease !== lease) return false;
    await this.#runJob(job, outcome, made);
    await this.#arm();
    return true;
  }

  /** `just bench` (ESIGN_BENCH set): `n` engine calls of `req` in this one invocation,
   *  each on a fresh instance in its own transaction, with no I/O between them: the wall
   *  time the caller sees, over `n`, is the CPU time of one call inside the object
   *  (workerd's clocks do not advance while code runs, so it cannot be timed here). */
  benchCalls(req, n) {
    let ok = 0;
    for (let i = 0; i < n; i++) {
      const res = this.#call((e) => e.handle(req), () => true, new Answers());
      if (res.status === 200) ok++;
    }
    return ok;
  }

  /** A hard bounce the mail provider reported: the engine's `mail.bounced` job. */
  async mailBounced(tag, reason) {
    hostJob(this.sql, randomId(), 'mail.bounced', new TextEncoder().encode(`${tag}\n${reason}`), Date.now());
    await this.#arm();
  }
}
