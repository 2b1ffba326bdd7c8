// Small byte helpers shared by the Worker's modules.

import { createHash } from 'node:crypto';

/** Lower-case hex SHA-256 (node:crypto through nodejs_compat: synchronous, which the
 *  engine's synchronous imports need). */
export const sha256Hex = (bytes) => createHash('sha256').update(bytes).digest('hex');

export const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');

/** 12 random bytes as hex: ids of blobs, jobs and rows. */
export const randomId = () => hex(crypto.getRandomValues(new Uint8Array(12)));

/** `n` random bytes (getRandomValues fills at most 65 536 a call). */
export function randomBytes(n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}

/** The DER bodies of the PEM blocks labelled `label` in `pem`. */
export function pemBlocks(pem, label) {
  const re = new RegExp(`-----BEGIN ${label}-----([\\s\\S]+?)-----END ${label}-----`, 'g');
  return [...pem.matchAll(re)].map((m) => Uint8Array.from(atob(m[1].replace(/\s+/g, '')), (c) => c.charCodeAt(0)));
}
