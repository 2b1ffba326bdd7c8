// An in-memory host for the esign engine component, in Node.js.
//
// The component runs unchanged: `transpile()` turns the file `esign engine export` writes
// into JavaScript with jco, and `Host` implements every import of `wit/esign.wit` the way
// `wit/README.md` asks of a host:
//
// - store and files: an ordered map of byte keys and a blob map; each engine call runs in
//   its own transaction (its reads see its own writes, and nothing is visible to other
//   calls until it commits). Calls run one at a time, so a commit never conflicts.
// - effects: recorded in the call's transaction and kept only when it commits (a 503 or
//   a trap commits nothing). Mail, SMS and webhook deliveries are kept in `outbox`, not
//   sent; jobs go to an in-memory queue that `runJobs()` works through.
// - work orders: `import-files` reads PDFs with pdf-lib (Word files are refused as
//   `conversion-unavailable`, downloads as `download-failed`); `render` builds the PDF
//   with pdf-lib but neither rasterizes pages (no page images, which the WIT allows) nor
//   seals (a seal order fails as `seal-failed`); `fetch` fails as `download-failed`.
// - host: argon2id through @node-rs/argon2; no eID provider, no signature checks, no
//   outbound HTTP (each answers the error the WIT provides for it).
//
// Every call gets a fresh instance of the component, as in the Rust host. Nothing is
// durable: the state lives as long as the `Host` object.

import { createHash, webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hashSync, verifySync, Algorithm } from '@node-rs/argon2';
import { PDFDocument, StandardFonts, rgb, degrees } from '@cantoo/pdf-lib';

/** Transpiles the component file `wasm` into `outDir` (jco, async instantiation, no WASI
 *  shim: the host supplies the two WASI interfaces the world imports). */
export async function transpile(wasm, outDir) {
  const { transpile: jco } = await import('@bytecodealliance/jco');
  const { files } = await jco(await readFile(wasm), {
    name: 'engine',
    instantiation: { tag: 'async' },
    noWasiShim: true,
    quiet: true,
  });
  for (const [name, bytes] of Object.entries(files)) {
    await mkdir(join(outDir, name, '..'), { recursive: true });
    await writeFile(join(outDir, name), bytes);
  }
}

/** The settings of `esign serve` without options (host/src/runtime/mod.rs `default_settings`). */
export function defaultSettings() {
  return {
    tokenTtlSecs: 5_184_000n,
    loginMaxFailures: 5,
    loginLockSecs: 900n,
    tokenMinIntervalMs: 1000n,
    baseUrl: 'http://127.0.0.1:8080',
    canConvertWord: false,
    uploadTtlSecs: 48n * 3600n,
    eidProvider: '',
    signingCertificate: '',
    oauthAccessTtlSecs: 3600n,
    mcpTestUser: '',
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

/** A work failure of the WIT (`types.work-failure`). */
class WorkFailure extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export class Host {
  /** `dir` holds the transpiled component (see `transpile`). */
  constructor(dir, settings = defaultSettings()) {
    this.dir = dir;
    this.settings = settings;
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
    this.dummyHash = hashSync('esign dummy password', { algorithm: Algorithm.Argon2id });
  }

  async #coreModule(name) {
    if (!this.modules.has(name)) {
      this.modules.set(name, WebAssembly.compile(await readFile(join(this.dir, name))));
    }
    return this.modules.get(name);
  }

  /** A fresh instance of the component whose imports act on transaction `txn`. */
  async #instance(txn) {
    const { instantiate } = await import(pathToFileURL(join(this.dir, 'engine.js')).href);
    return instantiate((name) => this.#coreModule(name), this.#imports(txn));
  }

  #keys() {
    this.sorted ??= [...this.data.keys()].sort();
    return this.sorted;
  }

  /** Runs `body(exports)` on a fresh instance in one transaction; commits when `keep`
   *  says so of the result. A trap rolls back and is rethrown. `times`, when given,
   *  receives the microseconds spent instantiating and calling. */
  async #call(body, keep, times) {
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
      'esign:engine/types@0.1.0': {},
      'esign:engine/store@0.1.0': {
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
      'esign:engine/files@0.1.0': {
        put(data) {
          if (host.blobStorageDown) throw 'blob storage is unavailable (a test fault)';
          const id = randomId();
          txn.blobs.set(id, Uint8Array.from(data));
          return { id, size: BigInt(data.length), sha256: sha256(data) };
        },
        get: (id) => (txn.blobs.has(id) ? txn.blobs.get(id) : host.blobs.get(id)) ?? undefined,
        delete: (id) => void txn.blobs.set(id, null),
      },
      'esign:engine/effects@0.1.0': {
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
        scheduleJob(spec) {
          const id = randomId();
          txn.effects.push(() => host.jobs.set(id, { id, ...spec, attempt: 1 }));
          return id;
        },
        sendMail: (mail) => void txn.effects.push(() => host.outbox.mails.push(mail)),
        sendSms: (sms) => void txn.effects.push(() => host.outbox.sms.push(sms)),
      },
      'esign:engine/host@0.1.0': {
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
        verifyPdf: () => ({
          signed: false,
          valid: false,
          wholeFile: false,
          signer: '',
          certificateSha256: '',
          byThisService: false,
          signedAtMs: undefined,
          timestampMs: undefined,
          timestampValid: false,
          documentId: '',
          logHead: '',
          problems: ['this host does not check signatures'],
        }),
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
    const req = {
      method,
      path,
      query,
      headers: headers.map(([k, v]) => [k.toLowerCase(), v]),
      body: typeof body === 'string' ? new TextEncoder().encode(body) : body,
      parts: [],
      origin,
      remoteAddr: '127.0.0.1',
    };
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
    const { outcome, blobs } = job.work ? await this.#perform(job.work) : { blobs: [] };
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

  /** Does a work order; the new blobs it made are written with the job's transaction. */
  async #perform(order) {
    const blobs = [];
    switch (order.tag) {
      case 'import-files': {
        const results = [];
        for (const source of order.val) {
          try {
            results.push({ tag: 'ok', val: await this.#import(source) });
          } catch (e) {
            results.push({ tag: 'failed', val: failure(e) });
          }
        }
        return { outcome: { tag: 'import-files', val: results }, blobs };
      }
      case 'render': {
        try {
          const file = await this.#render(order.val, blobs);
          return { outcome: { tag: 'render', val: { tag: 'ok', val: file } }, blobs };
        } catch (e) {
          return { outcome: { tag: 'render', val: { tag: 'err', val: failure(e) } }, blobs: [] };
        }
      }
      case 'fetch': {
        const err = { code: 'download-failed', message: 'this host makes no outbound requests' };
        return { outcome: { tag: 'fetch', val: { tag: 'err', val: err } }, blobs };
      }
      default:
        throw new Error(`unknown work order ${order.tag}`);
    }
  }

  async #import(source) {
    if (!source.blob) throw new WorkFailure('download-failed', 'this host makes no outbound requests');
    const bytes = this.blobs.get(source.blob);
    if (!bytes) {
      throw new WorkFailure('blob-missing', 'the file is no longer stored (the upload expired or was removed)');
    }
    const head = Buffer.from(bytes.subarray(0, 4)).toString('latin1');
    if (head === 'PK\u0003\u0004') {
      throw new WorkFailure('conversion-unavailable', 'Word files cannot be converted by this host');
    }
    if (head !== '%PDF' && !source.name.toLowerCase().endsWith('.pdf')) {
      throw new WorkFailure('unsupported-format', `${JSON.stringify(source.name)} is neither a PDF nor a Word (.docx) file`);
    }
    const pdf = await loadPdf(bytes);
    return {
      blob: source.blob,
      size: BigInt(bytes.length),
      sha256: sha256(bytes),
      pages: pdf.getPages().map(visibleSize),
      placeholders: [],
      downloaded: undefined,
    };
  }

  /** The final PDF of a render order (see `types.render-order`), without page images. */
  async #render(order, blobs) {
    if (order.seal) throw new WorkFailure('seal-failed', 'this host does not seal documents');
    const out = await PDFDocument.create();
    const font = await out.embedFont(StandardFonts.Helvetica);
    const bold = await out.embedFont(StandardFonts.HelveticaBold);
    const content = [];
    for (const id of order.sources) {
      const bytes = this.blobs.get(id);
      if (!bytes) throw new WorkFailure('blob-missing', 'a source file is no longer stored');
      const source = await loadPdf(bytes);
      for (const page of await out.copyPages(source, source.getPageIndices())) {
        content.push(out.addPage(page));
      }
    }
    for (const stamp of order.stamps) {
      const page = content[stamp.page];
      if (!page) continue;
      const box = page.getCropBox();
      const y = box.y + box.height - stamp.top - stamp.height;
      const c = stamp.content;
      if (c.tag === 'text') {
        const size = Math.max(4, Math.min(stamp.height * 0.7, (stamp.width / Math.max(1, font.widthOfTextAtSize(latin(c.val), 1)))));
        page.drawText(latin(c.val), { x: box.x + stamp.left, y: y + stamp.height * 0.2, size, font });
      } else if (c.tag === 'check') {
        const [x, h, w] = [box.x + stamp.left, stamp.height, stamp.width];
        page.drawLine({ start: { x: x + w * 0.15, y: y + h * 0.5 }, end: { x: x + w * 0.4, y: y + h * 0.2 }, thickness: 1.5 });
        page.drawLine({ start: { x: x + w * 0.4, y: y + h * 0.2 }, end: { x: x + w * 0.85, y: y + h * 0.85 }, thickness: 1.5 });
      } else if (c.tag === 'image') {
        const png = await this.#png(out, c.val);
        if (png) {
          const s = png.scaleToFit(stamp.width, stamp.height);
          page.drawImage(png, { x: box.x + stamp.left, y, width: s.width, height: s.height });
        }
      }
    }
    await this.#blocks(out, order.appendix, font, bold);
    if (out.getPageCount() === 0) throw new WorkFailure('render-failed', 'nothing to render');
    const contentSha256 = sha256(await out.save({ useObjectStreams: false }));
    await this.#blocks(out, [...order.summary, { tag: 'text', val: `Content SHA-256: ${contentSha256}` }], font, bold);
    const pdf = await out.save({ useObjectStreams: false });
    const blob = randomId();
    blobs.push([blob, pdf]);
    return {
      blob,
      size: BigInt(pdf.length),
      sha256: sha256(pdf),
      contentSha256,
      pageCount: out.getPageCount(),
      pageImages: [],
      seal: undefined,
    };
  }

  async #png(out, id) {
    const bytes = this.blobs.get(id);
    try {
      return bytes ? await out.embedPng(bytes) : null;
    } catch {
      return null;
    }
  }

  /** Draws generated layout on new A4 pages. */
  async #blocks(out, blocks, font, bold) {
    if (blocks.length === 0) return;
    const [width, height, margin] = [595.28, 841.89, 56];
    let page = out.addPage([width, height]);
    let y = height - margin;
    const line = (text, { f = font, size = 10, x = margin, right = false } = {}) => {
      const t = latin(text);
      const w = f.widthOfTextAtSize(t, size);
      page.drawText(t, { x: right ? width - margin - w : x, y, size, font: f });
    };
    const room = (h) => {
      if (y - h < margin) {
        page = out.addPage([width, height]);
        y = height - margin;
      }
    };
    for (const b of blocks) {
      switch (b.tag) {
        case 'heading':
          room(24);
          y -= 18;
          line(b.val, { f: bold, size: 14 });
          y -= 6;
          break;
        case 'text':
          for (const l of wrap(latin(b.val), font, 10, width - 2 * margin)) {
            room(14);
            y -= 14;
            line(l);
          }
          break;
        case 'row':
        case 'header-row': {
          room(14);
          y -= 14;
          const cells = b.val;
          const step = (width - 2 * margin) / Math.max(1, cells.length);
          cells.forEach((cell, i) => {
            const last = i === cells.length - 1 && cells.length > 1;
            line(cell, { f: b.tag === 'header-row' ? bold : font, x: margin + i * step, right: last });
          });
          break;
        }
        case 'rule':
          room(8);
          y -= 6;
          page.drawLine({ start: { x: margin, y }, end: { x: width - margin, y }, thickness: 0.5, color: rgb(0.5, 0.5, 0.5) });
          break;
        case 'page-break':
          page = out.addPage([width, height]);
          y = height - margin;
          break;
        case 'signature': {
          room(80);
          const png = b.val.image ? await this.#png(out, b.val.image) : null;
          if (png) {
            const s = png.scaleToFit(200, 50);
            page.drawImage(png, { x: margin, y: y - 50, width: s.width, height: s.height });
          } else {
            const oblique = await out.embedFont(StandardFonts.HelveticaOblique);
            page.drawText(latin(b.val.text), { x: margin, y: y - 35, size: 18, font: oblique, rotate: degrees(0) });
          }
          y -= 64;
          line(b.val.caption, { size: 9 });
          break;
        }
        default:
          break;
      }
    }
  }
}

/** A PDF for reading; an encrypted one needs a password this host does not have. */
async function loadPdf(bytes) {
  let pdf;
  try {
    pdf = await PDFDocument.load(bytes, { updateMetadata: false });
  } catch (e) {
    if (/encrypted/i.test(String(e))) {
      throw new WorkFailure('encrypted', 'the PDF is password-protected; upload it without a password');
    }
    throw new WorkFailure('invalid-pdf', `the file is not a readable PDF: ${e.message ?? e}`);
  }
  if (pdf.getPageCount() === 0) throw new WorkFailure('invalid-pdf', 'the file is not a readable PDF: it has no pages');
  return pdf;
}

/** A page's displayed size: its crop box within its media box, rotation applied. */
function visibleSize(page) {
  const m = page.getMediaBox();
  const c = page.getCropBox();
  const w = Math.min(m.x + m.width, c.x + c.width) - Math.max(m.x, c.x);
  const h = Math.min(m.y + m.height, c.y + c.height) - Math.max(m.y, c.y);
  const [width, height] = [Math.abs(w), Math.abs(h)];
  return page.getRotation().angle % 180 === 90 ? { width: height, height: width } : { width, height };
}

/** What the standard fonts can draw (WinAnsi); anything else becomes `?`. */
function latin(text) {
  return String(text).replace(/[^\x20-\x7e\xa0-\xff]/g, '?');
}

function wrap(text, font, size, width) {
  const lines = [];
  for (const para of text.split('\n')) {
    let cur = '';
    for (const word of para.split(' ')) {
      const next = cur ? `${cur} ${word}` : word;
      if (cur && font.widthOfTextAtSize(next, size) > width) {
        lines.push(cur);
        cur = word;
      } else {
        cur = next;
      }
    }
    lines.push(cur);
  }
  return lines;
}

function failure(e) {
  return e instanceof WorkFailure
    ? { code: e.code, message: e.message }
    : { code: 'render-failed', message: String(e?.message ?? e) };
}
