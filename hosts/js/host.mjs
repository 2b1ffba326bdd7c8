// An in-memory host for the esign engine and formats components, in Node.js.
//
// The components run unchanged: `transpile()` turns the files `esign engine export` writes
// into JavaScript with jco, and `Host` implements every import of `wit/esign.wit` the way
// `wit/README.md` asks of a host:
//
// - store and files: an ordered map of byte keys and a blob map; each engine call runs in
//   its own transaction (its reads see its own writes, and nothing is visible to other
//   calls until it commits). Calls run one at a time, so a commit never conflicts.
// - effects: recorded in the call's transaction and kept only when it commits (a 503 or
//   a trap commits nothing). Mail, SMS and webhook deliveries are kept in `outbox`, not
//   sent; jobs go to an in-memory queue that `runJobs()` works through.
// - work orders: done by the formats component (`esign engine export --formats`, world
//   `esign:formats/formats`), the code the Rust host links, transpiled with jco like the
//   engine: imports, renders with page images and seals give the bytes the Rust host's
//   would. Its imports here: the blobs in memory (new ones commit with the job's call);
//   the sealing key (PEM, given to `Host`) through @noble/curves' P-256 (RFC 6979
//   deterministic, as the Rust host signs); no authority, no downloads, no Word
//   converter (each answers what `wit/README.md` provides for it); WASI from jco's
//   preview2 shim, sandboxed (no files, network or environment).
// - host: argon2id through @node-rs/argon2; `verify-pdf` through the formats
//   component's `check-pdf`; no eID provider, no outbound HTTP (each answers the error
//   the WIT provides for it).
//
// Every call gets a fresh instance of the component, as in the Rust host. Nothing is
// durable: the state lives as long as the `Host` object.

import { X509Certificate, createHash, createPrivateKey, webcrypto } from 'node:crypto';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hashSync, verifySync, Algorithm } from '@node-rs/argon2';
import { p256 } from '@noble/curves/nist.js';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import { formParts } from './form-parts.mjs';

/** Transpiles the component file `wasm` into `outDir` (jco, no WASI shim: the host
 *  supplies the WASI interfaces the world imports). `name` is `engine` for the engine
 *  (instantiated asynchronously) or `formats` for the formats component (synchronously:
 *  the engine's `verify-pdf` import, which is synchronous, makes one). */
export async function transpile(wasm, outDir, name = 'engine') {
  const { transpile: jco } = await import('@bytecodealliance/jco');
  const { files } = await jco(await readFile(wasm), {
    name,
    instantiation: { tag: name === 'formats' ? 'sync' : 'async' },
    noWasiShim: true,
    quiet: true,
  });
  for (const [name, bytes] of Object.entries(files)) {
    await mkdir(join(outDir, name, '..'), { recursive: true });
    await writeFile(join(outDir, name), bytes);
  }
}

/**
 * The settings of `esign serve` without options (host/src/runtime/mod.rs `default_settings`).
 * The policy members (`tokenTtlSecs`, `loginMaxFailures`, `loginLockSecs`,
 * `tokenMinIntervalMs`, `uploadTtlSecs`, `oauthAccessTtlSecs`, `completionAttachmentMaxBytes`,
 * `completionLinkDays`) are WIT options: left
 * undefined, the engine's defaults apply (engine/src/base/policy.rs); set one to override.
 */
export function defaultSettings() {
  return {
    baseUrl: 'http://127.0.0.1:8080',
    canConvertWord: false,
    blobResponses: false,
    eidProvider: '',
    signingCertificate: '',
    mcpTestUser: '',
    // Each Host makes its own (the constructor), kept in memory like its state.
    linkKey: '',
  };
}

// jco's glue probes JSPI with `try { WebAssembly.promising(f) } catch {}` three times per
// instantiation. Where JSPI is missing (Node 20), each probe throws "is not a function",
// and V8 re-parses the whole 9 000-line generated function to word that message: about
// 2 ms a probe, most of an instantiation. A stand-in that throws its own error keeps the
// same fallback without the re-parse (instantiation 7 ms -> 0.8 ms). Only where JSPI is
// absent; nothing in the glue uses `promising` for anything but this probe.
if (typeof WebAssembly.promising !== 'function') {
  WebAssembly.promising = () => {
    throw new TypeError('JSPI is not available in this runtime');
  };
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const randomId = () => hex(webcrypto.getRandomValues(new Uint8Array(12)));
// Lower-case hex keeps byte order: comparing two hex strings compares their bytes.
const bytesOf = (key) => Buffer.from(key, 'hex');

/** The sealing key of PEM text `keyPem` (PKCS#8 or SEC1 P-256) and its chain `certPem`:
 *  the private scalar for @noble/curves, the certificates as DER, signer first. */
function sealingKey(keyPem, certPem) {
  const jwk = createPrivateKey(keyPem).export({ format: 'jwk' });
  if (jwk.crv !== 'P-256') throw new Error(`the sealing key is ${jwk.crv}, not P-256`);
  const certs = certPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return {
    secret: Buffer.from(jwk.d, 'base64url'),
    chain: certs.map((c) => new Uint8Array(new X509Certificate(c).raw)),
    certPem,
    certificateSha256: certs.length ? sha256(new X509Certificate(certs[0]).raw) : '',
  };
}

const pascal = (tag) => tag.replace(/(^|-)(\w)/g, (_, __, c) => c.toUpperCase());
const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** A value in jco's shapes (variants as `{ tag, val }`, camelCase fields, u64 as BigInt)
 *  in the shape Rust's serde gives the same WIT types (externally tagged enums, snake_case
 *  fields, numbers; absent options left out): how a work order goes to `esign engine
 *  work`, and an outcome is compared with what it wrote. */
export function toSerde(x) {
  if (typeof x === 'bigint') return Number(x);
  if (Array.isArray(x)) return x.map(toSerde);
  if (x && typeof x === 'object') {
    if (typeof x.tag === 'string' && Object.keys(x).every((k) => k === 'tag' || k === 'val')) {
      const tag = x.tag === 'failed' ? 'Err' : pascal(x.tag); // import-result's failure is a Result's Err
      return x.val === undefined ? tag : { [tag]: toSerde(x.val) };
    }
    const fields = Object.entries(x).filter(([, v]) => v !== undefined);
    return Object.fromEntries(fields.map(([k, v]) => [snake(k), toSerde(v)]));
  }
  return x;
}

export class Host {
  /** `dir` holds the transpiled engine (see `transpile`); `formatsDir` the transpiled
   *  formats component; `signing`, when given, `{ keyPem, certPem }` for seals. */
  constructor(dir, settings = defaultSettings(), { formatsDir, signing } = {}) {
    this.dir = dir;
    this.formatsDir = formatsDir;
    this.sealing = signing ? sealingKey(signing.keyPem, signing.certPem) : null;
    this.settings = {
      ...settings,
      signingCertificate: this.sealing?.certPem ?? settings.signingCertificate,
      // The recipient link key: the caller's, else one for this host's life (its state
      // lives in memory as long).
      linkKey: settings.linkKey || hex(webcrypto.getRandomValues(new Uint8Array(32))),
    };
    /** What the formats component warned of. */
    this.warnings = [];
    this.data = new Map(); // hex key -> Uint8Array
    this.sorted = null; // the keys in order, rebuilt after a commit changed the key set
    this.blobs = new Map(); // id -> Uint8Array
    this.jobs = new Map(); // id -> { id, kind, payload, runAtMs, work, scope, attempt }
    this.deadJobs = [];
    this.outbox = { events: [], deliveries: [], mails: [], sms: [] };
    this.modules = new Map();
    this.errors = [];
    /** Tests: `files.put` fails while set, as when the blob storage is unavailable. */
    this.blobStorageDown = false;
    /** Tests: the formats component's `signing.sign` fails while set. */
    this.signingDown = false;
    /** Tests: the time (ms since the epoch) work orders state, instead of now. */
    this.clock = undefined;
    /** Called with `{ order, nowMs, outcome, made }` after each work order. */
    this.onWork = null;
    this.dummyHash = hashSync('esign dummy password', { algorithm: Algorithm.Argon2id });
  }

  async #coreModule(dir, name) {
    const path = join(dir, name);
    if (!this.modules.has(path)) {
      this.modules.set(path, WebAssembly.compile(await readFile(path)));
    }
    return this.modules.get(path);
  }

  /** A fresh instance of the component whose imports act on transaction `txn`. */
  async #instance(txn) {
    const { instantiate } = await import(pathToFileURL(join(this.dir, 'engine.js')).href);
    return instantiate((name) => this.#coreModule(this.dir, name), this.#imports(txn));
  }

  /** Loads the formats component once: its glue and its core modules, compiled. */
  async #loadFormats() {
    if (this.formatsGlue || !this.formatsDir) return;
    const names = (await readdir(this.formatsDir)).filter((n) => n.endsWith('.wasm'));
    this.formatsModules = new Map();
    for (const n of names) this.formatsModules.set(n, await WebAssembly.compile(await readFile(join(this.formatsDir, n))));
    this.formatsGlue = await import(pathToFileURL(join(this.formatsDir, 'formats.js')).href);
  }

  /** A fresh instance of the formats component (synchronous, once `#loadFormats` ran);
   *  the blobs it puts go to `made`. */
  #formats(made) {
    if (!this.formatsGlue) throw new Error('this Host was made without the formats component');
    const wasi = new WASIShim({ sandbox: { preopens: {}, env: {}, args: ['formats'], enableNetwork: false } });
    const imports = { ...wasi.getImportObject(), ...this.#formatsImports(made) };
    return this.formatsGlue.instantiate((name) => this.formatsModules.get(name), imports);
  }

  #formatsImports(made) {
    const host = this;
    const imports = {
      'esign:engine/types@0.5.0': {},
      'esign:formats/blobs@0.5.0': {
        get: (id) => host.blobs.get(id) ?? undefined,
        put(data) {
          const id = randomId();
          made.push([id, Uint8Array.from(data)]);
          return { id, size: BigInt(data.length), sha256: sha256(data) };
        },
      },
      'esign:formats/download@0.5.0': {
        fetch() {
          throw 'this host makes no outbound requests';
        },
      },
      'esign:formats/convert@0.5.0': {
        docxToPdf() {
          throw { code: 'conversion-unavailable', message: 'Word files cannot be converted by this host' };
        },
      },
      'esign:formats/signing@0.5.0': {
        certificates() {
          if (!host.sealing) throw 'this host has no sealing key';
          return host.sealing.chain;
        },
        sign(digest) {
          if (!host.sealing) throw 'this host has no sealing key';
          if (host.signingDown) throw 'the sealing key is unavailable (a test fault)';
          const sig = p256.sign(digest, host.sealing.secret, { prehash: false, lowS: false, format: 'der' });
          return sig;
        },
      },
      'esign:formats/timestamping@0.5.0': { exchange: () => undefined },
      'esign:formats/log@0.5.0': { warn: (message) => void host.warnings.push(message) },
    };
    for (const name of Object.keys(imports)) imports[name.replace(/@[^@/]*$/, '')] = imports[name];
    return imports;
  }

  #keys() {
    this.sorted ??= [...this.data.keys()].sort();
    return this.sorted;
  }

  /** Runs `body(exports)` on a fresh instance in one transaction; commits when `keep`
   *  says so of the result. A trap rolls back and is rethrown. `times`, when given,
   *  receives the microseconds spent instantiating and calling. */
  async #call(body, keep, times) {
    await this.#loadFormats();
    const txn = { writes: new Map(), blobs: new Map(), effects: [] };
    const t0 = process.hrtime.bigint();
    const exports = await this.#instance(txn);
    const t1 = process.hrtime.bigint();
    const result = body(exports);
    if (times) {
      times.instantiateUs = Number(t1 - t0) / 1000;
      times.callUs = Number(process.hrtime.bigint() - t1) / 1000;
    }
    if (keep(result)) this.#commit(txn);
    return result;
  }

  #commit(txn) {
    for (const [k, v] of txn.writes) {
      if (v === null) {
        if (this.data.delete(k)) this.sorted = null;
      } else {
        if (!this.data.has(k)) this.sorted = null;
        this.data.set(k, v);
      }
    }
    for (const [id, v] of txn.blobs) {
      if (v === null) this.blobs.delete(id);
      else this.blobs.set(id, v);
    }
    for (const apply of txn.effects) apply();
  }

  #imports(txn) {
    const host = this;
    const get = (k) => (txn.writes.has(k) ? txn.writes.get(k) : host.data.get(k)) ?? undefined;
    const imports = {
      'esign:engine/types@0.5.0': {},
      'esign:engine/store@0.5.0': {
        get: (key) => get(hex(key)) ?? undefined,
        put: (key, value) => void txn.writes.set(hex(key), Uint8Array.from(value)),
        delete: (key) => void txn.writes.set(hex(key), null),
        scan(start, end, limit, reverse) {
          const [lo, hi] = [hex(start), hex(end)];
          const keys = new Set(host.#keys().filter((k) => k >= lo && k < hi));
          for (const k of txn.writes.keys()) if (k >= lo && k < hi) keys.add(k);
          const ordered = [...keys].sort();
          if (reverse) ordered.reverse();
          const out = [];
          for (const k of ordered) {
            if (out.length >= limit) break;
            const v = get(k);
            if (v) out.push([bytesOf(k), v]);
          }
          return out;
        },
      },
      'esign:engine/files@0.5.0': {
        put(data) {
          if (host.blobStorageDown) throw 'blob storage is unavailable (a test fault)';
          const id = randomId();
          txn.blobs.set(id, Uint8Array.from(data));
          return { id, size: BigInt(data.length), sha256: sha256(data) };
        },
        // Nothing is staged here (form-parts.mjs passes every part whole).
        keep(id) {
          throw `the request staged no file part ${id}`;
        },
        get: (id) => (txn.blobs.has(id) ? txn.blobs.get(id) : host.blobs.get(id)) ?? undefined,
        delete: (id) => void txn.blobs.set(id, null),
      },
      'esign:engine/effects@0.5.0': {
        emitEvent(event, deliveries) {
          txn.effects.push(() => {
            host.outbox.events.push(event);
            host.outbox.deliveries.push(...deliveries);
          });
        },
        cancelDeliveries(subscriptionId) {
          txn.effects.push(() => {
            const keep = host.outbox.deliveries.filter((d) => d.subscriptionId !== subscriptionId);
            host.outbox.deliveries = keep;
          });
        },
        // This host delivers no webhooks: it holds none.
        pendingDeliveries: () => [],
        scheduleJob(spec) {
          const id = randomId();
          txn.effects.push(() => host.jobs.set(id, { id, ...spec, attempt: 1 }));
          return id;
        },
        sendMail: (mail) => void txn.effects.push(() => host.outbox.mails.push(mail)),
        sendSms: (sms) => void txn.effects.push(() => host.outbox.sms.push(sms)),
      },
      'esign:engine/host@0.5.0': {
        getSettings: () => host.settings,
        hashPassword: (password) => hashSync(password, { algorithm: Algorithm.Argon2id }),
        verifyPassword(password, hash) {
          if (!hash) {
            verifySync(host.dummyHash, password);
            return false;
          }
          try {
            return verifySync(hash, password);
          } catch {
            return false;
          }
        },
        logError: (message) => void host.errors.push(message),
        eidStart() {
          throw 'this host has no eID provider';
        },
        eidFinish() {
          throw 'this host has no eID provider';
        },
        verifyPdf: (data) => host.#checkPdf(data),
        fetchClientMetadata() {
          throw 'this host makes no outbound requests';
        },
      },
      'wasi:clocks/wall-clock@0.2.12': {
        now() {
          const ms = BigInt(Date.now());
          return { seconds: ms / 1000n, nanoseconds: Number(ms % 1000n) * 1e6 };
        },
        resolution: () => ({ seconds: 0n, nanoseconds: 1e6 }),
      },
      'wasi:random/random@0.2.12': {
        getRandomBytes: (n) => webcrypto.getRandomValues(new Uint8Array(Number(n))),
        getRandomU64: () => webcrypto.getRandomValues(new BigUint64Array(1))[0],
      },
    };
    // jco's generated code looks imports up by their unversioned names.
    for (const name of Object.keys(imports)) imports[name.replace(/@[^@/]*$/, '')] = imports[name];
    return imports;
  }

  /** Answers one request like the Rust host: `{ status, headers, body }` with the body as
   *  a Buffer. `headers` is a list of `[name, value]`; `body` a string or bytes. */
  async request(method, path, options = {}) {
    const { status, headers, body } = await this.timedRequest(method, path, options);
    return { status, headers, body };
  }

  /** `request`, with the time spent instantiating (`instantiateUs`) and in the call
   *  (`callUs`) added, in microseconds. */
  async timedRequest(method, path, { query = '', headers = [], body = '', origin = 'http' } = {}) {
    const lower = headers.map(([k, v]) => [k.toLowerCase(), v]);
    let bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
    let parts = [];
    const ctype = lower.find(([k]) => k === 'content-type')?.[1] ?? '';
    if (/^multipart\/form-data/i.test(ctype)) {
      // Decoded like the Rust host does before the engine sees it: Node's own decoder
      // (undici's `formData()`); a malformed body is the same 400.
      try {
        parts = await formParts(ctype, bytes);
      } catch (e) {
        const error = { error: 'invalid_multipart', description: `the multipart/form-data body is malformed: ${e.message}`, status: 400 };
        return { status: 400, headers: [['content-type', 'application/json']], body: Buffer.from(JSON.stringify(error)) };
      }
      bytes = new Uint8Array();
    }
    const req = { method, path, query, headers: lower, body: bytes, parts, origin, remoteAddr: '127.0.0.1' };
    const times = {};
    const res = await this.#call(
      (e) => e.handle(req),
      (r) => r.status !== 503,
      times,
    );
    return { status: res.status, headers: res.headers, body: Buffer.from(res.body), ...times };
  }

  /** Runs every job that is due (and the jobs those schedule that are due at once); work
   *  orders are done first, outside the transaction. Returns how many ran. */
  async runJobs(now = Date.now()) {
    let ran = 0;
    for (;;) {
      const due = [...this.jobs.values()]
        .filter((j) => Number(j.runAtMs) <= now)
        .sort((a, b) => Number(a.runAtMs - b.runAtMs));
      if (due.length === 0) return ran;
      for (const job of due) {
        await this.#runJob(job);
        ran += 1;
      }
    }
  }

  async #runJob(job) {
    const { outcome, blobs } = job.work ? await this.perform(job.work) : { blobs: [] };
    let result;
    try {
      result = await this.#call(
        (e) =>
          e.runJob({ id: job.id, kind: job.kind, payload: job.payload, attempt: job.attempt, outcome }),
        () => true,
      );
    } catch (trap) {
      // Rolled back; tried again later, like the Rust host does with a trapped job.
      this.errors.push(`job ${job.kind}: ${trap}`);
      job.attempt += 1;
      job.runAtMs = BigInt(Date.now() + 60_000);
      return;
    }
    for (const [id, bytes] of blobs) this.blobs.set(id, bytes);
    if (result.tag === 'retry-at') {
      job.attempt += 1;
      job.runAtMs = result.val;
    } else {
      this.jobs.delete(job.id);
      if (result.tag === 'failed') this.deadJobs.push({ ...job, reason: result.val });
    }
  }

  /** Does a work order (jco's shape of the WIT's `work-order`) in a fresh instance of
   *  the formats component: `{ outcome, blobs }`, the new blobs as `[id, bytes]` (a job
   *  writes them with its transaction; nothing here is stored). A trap (a panic of a PDF library,
   *  which wasm cannot catch) answers the order with a failure, as the Rust host
   *  answers a work order whose thread panicked. */
  async perform(order) {
    await this.#loadFormats();
    const made = [];
    const nowMs = this.now();
    let outcome;
    try {
      outcome = this.#formats(made).work.perform(order, BigInt(nowMs));
    } catch (trap) {
      const message = `the work failed: ${trap?.message ?? trap}`;
      const failed = (code) => ({ code, message });
      made.length = 0;
      outcome = {
        'import-files': () => ({ tag: 'import-files', val: order.val.map(() => ({ tag: 'failed', val: failed('conversion-failed') })) }),
        render: () => ({ tag: 'render', val: { tag: 'err', val: failed('render-failed') } }),
        fetch: () => ({ tag: 'fetch', val: { tag: 'err', val: failed('download-failed') } }),
      }[order.tag]();
    }
    this.onWork?.({ order, nowMs, outcome, made });
    return { outcome, blobs: made };
  }

  /** The time seals state; tests may fix it. */
  now() {
    return this.clock ?? Date.now();
  }

  /** `host.verify-pdf`: the formats component's check, against this host's key. */
  #checkPdf(data) {
    if (!this.formatsGlue) {
      return {
        signed: false, valid: false, wholeFile: false, signer: '', certificateSha256: '',
        byThisService: false, signedAtMs: undefined, timestampMs: undefined, timestampValid: false,
        documentId: '', logHead: '', problems: ['this host does not check signatures'],
      };
    }
    return this.#formats([]).work.checkPdf(data, this.sealing?.certificateSha256 ?? '');
  }
}
