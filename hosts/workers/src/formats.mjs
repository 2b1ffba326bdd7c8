// The formats component (`esign engine export --formats`, transpiled by build.mjs): the
// file work of the engine's work orders, the check of sealed PDFs and the making of a
// sealing key. One fresh instance per call, synchronous; its imports answered from what
// the caller gives it:
//
// - `blobs`: a Map of the blobs the order may read (fetched beforehand: nothing can be
//   awaited inside a call); new blobs go to `made`, written by the caller with the job.
// - `signing`: `{ secret, chain }` (the P-256 scalar and the certificates, DER, signer
//   first); signatures through @noble/curves (RFC 6979, the bytes the Rust host makes).
// - no authority, no downloads, no Word converter: each answers what wit/README.md
//   provides for a host without it. WASI from jco's preview2 shim, sandboxed.

import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import { p256 } from '@noble/curves/nist.js';
import { instantiate } from '../build/formats/formats.js';
import { formatsCores } from '../build/cores.mjs';
import { randomId, sha256Hex } from './bytes.mjs';

/** A fresh instance; `io` is `{ blobs, made, signing, warnings }`. */
function instance(io) {
  const wasi = new WASIShim({ sandbox: { preopens: {}, env: {}, args: ['formats'], enableNetwork: false } });
  const noKey = 'this host has no sealing key';
  const imports = {
    ...wasi.getImportObject(),
    'esign:engine/types': {},
    'esign:formats/blobs': {
      get: (id) => io.made.find(([m]) => m === id)?.[1] ?? io.blobs?.get(id) ?? undefined,
      put(data) {
        const id = randomId();
        const bytes = Uint8Array.from(data);
        io.made.push([id, bytes]);
        return { id, size: BigInt(bytes.length), sha256: sha256Hex(bytes) };
      },
    },
    'esign:formats/download': {
      fetch() {
        throw 'this host downloads no files for work orders';
      },
    },
    'esign:formats/convert': {
      docxToPdf() {
        throw { code: 'conversion-unavailable', message: 'Word files cannot be converted on this host' };
      },
    },
    'esign:formats/signing': {
      certificates() {
        if (!io.signing) throw noKey;
        return io.signing.chain;
      },
      sign(digest) {
        if (!io.signing) throw noKey;
        return p256.sign(digest, io.signing.secret, { prehash: false, lowS: false, format: 'der' });
      },
    },
    'esign:formats/timestamping': { exchange: () => undefined },
    'esign:formats/log': { warn: (message) => void io.warnings?.push(message) },
  };
  for (const name of Object.keys(imports)) imports[name.replace(/@[^@/]*$/, '')] = imports[name];
  return instantiate((name) => formatsCores[name], imports);
}

/** Does `order` at `nowMs`: `{ outcome, made, warnings }`. A trap (a panic of a PDF
 *  library, which wasm cannot catch) answers the order with a failure, as the Rust host
 *  answers a work order whose thread panicked. */
export function perform(order, nowMs, { blobs, signing }) {
  const io = { blobs, signing, made: [], warnings: [] };
  try {
    const outcome = instance(io).work.perform(order, BigInt(nowMs));
    return { outcome, made: io.made, warnings: io.warnings };
  } catch (trap) {
    return { outcome: failed(order, `the work failed: ${trap?.message ?? trap}`), made: [], warnings: io.warnings };
  }
}

function failed(order, message) {
  const failure = (code) => ({ code, message });
  switch (order.tag) {
    case 'import-files':
      return { tag: 'import-files', val: order.val.map(() => ({ tag: 'failed', val: failure('conversion-failed') })) };
    case 'render':
      return { tag: 'render', val: { tag: 'err', val: failure('render-failed') } };
    default:
      return { tag: 'fetch', val: { tag: 'err', val: failure('download-failed') } };
  }
}

/** `host.verify-pdf`: the check of a PDF's signature, against this host's certificate. */
export function checkPdf(pdf, ownCertificateSha256) {
  return instance({ made: [] }).work.checkPdf(pdf, ownCertificateSha256);
}

/** A new sealing key: `[keyPem, certPem]` for the 32 random bytes `secret` (a P-256
 *  scalar) and a self-signed certificate, as the Rust host makes one. */
export function generateSigningKey(secret, nowMs) {
  return instance({ made: [] }).work.generateSigningKey(secret, BigInt(nowMs));
}

/** The blob ids `order` may read: its sources, and the pictures its stamps and
 *  signature blocks name. */
export function blobsOf(order) {
  const ids = new Set();
  if (order.tag === 'import-files') {
    for (const s of order.val) if (s.blob) ids.add(s.blob);
  } else if (order.tag === 'render') {
    const r = order.val;
    for (const s of r.sources) ids.add(s);
    for (const s of r.stamps) if (s.content.tag === 'image') ids.add(s.content.val);
    for (const b of [...r.appendix, ...r.summary]) if (b.tag === 'signature' && b.val.image) ids.add(b.val.image);
  }
  return [...ids];
}
