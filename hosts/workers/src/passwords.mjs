// Passwords without stalling the Durable Object. argon2id (m = 19 MiB, t = 2, p = 1, as
// the Rust host: DESIGN.md §4) costs about 150 ms of CPU; inside the object it would
// hold every other request that long. So the engine's `hash-password` and
// `verify-password` imports never compute inside the object: a call that needs one
// records what it asks and stops (`NeedPasswords`, which rolls its transaction back);
// the Worker computes the answers outside (`answer`, with @noble/hashes' argon2idAsync,
// which yields to the event loop every few milliseconds) and runs the call again with
// them (`Answers`). A call asks at most a few things, so it runs at most a few times.
//
// PHC strings are written and read with @phc/format, the same form the Rust host's
// `argon2` crate uses, so hashes move between hosts.

import { Buffer } from 'node:buffer';
import { argon2id, argon2idAsync } from '@noble/hashes/argon2.js';
import phc from '@phc/format';

// @phc/format uses the global Buffer when called (nodejs_compat provides node:buffer).
globalThis.Buffer ??= Buffer;
const { serialize, deserialize } = phc;

const PARAMS = { m: 19 * 1024, t: 2, p: 1 };

/** Thrown by an import whose answer the call was not given: what it asks. */
export class NeedPasswords extends Error {
  constructor(asks) {
    super('the call needs passwords hashed or verified outside the object');
    this.asks = asks;
  }
}

/** What one run of a call was given: `[{ op: 'hash', password, result }]` and
 *  `[{ op: 'verify', password, hash, result }]`; what it asks and was not given is
 *  collected in `asks`. */
export class Answers {
  constructor(list = []) {
    this.list = list;
    this.asks = [];
  }

  hash(password) {
    const known = this.list.find((a) => a.op === 'hash' && a.password === password);
    if (known) return known.result;
    return this.#ask({ op: 'hash', password });
  }

  verify(password, hash) {
    const known = this.list.find((a) => a.op === 'verify' && a.password === password && a.hash === hash);
    if (known) return known.result;
    return this.#ask({ op: 'verify', password, hash });
  }

  #ask(ask) {
    this.asks.push(ask);
    throw new NeedPasswords(this.asks);
  }
}

/** Answers `asks` (in the Worker, outside the object; `sync` computes without yielding,
 *  for the rare job that asks inside the object). */
export async function answer(asks, sync = false) {
  const out = [];
  for (const a of asks) {
    const result = a.op === 'hash' ? await hashPassword(a.password, sync) : await verifyPassword(a.password, a.hash, sync);
    out.push({ ...a, result });
  }
  return out;
}

/** An argon2id PHC string for `password`. */
export async function hashPassword(password, sync = false) {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = await (sync ? argon2id : argon2idAsync)(password, salt, { ...PARAMS, dkLen: 32 });
  return serialize({ id: 'argon2id', version: 19, params: PARAMS, salt: Buffer.from(salt), hash: Buffer.from(hash) });
}

let dummy;
/** Whether `password` matches the PHC string `hash`. An empty or unreadable `hash` is
 *  checked against a dummy hash, so an unknown account costs what a wrong password
 *  costs, and is false. */
export async function verifyPassword(password, hash, sync = false) {
  let parsed = null;
  try {
    parsed = hash ? deserialize(hash) : null;
  } catch {
    parsed = null;
  }
  if (!parsed || parsed.id !== 'argon2id' || !parsed.salt || !parsed.hash) {
    dummy ??= deserialize(await hashPassword('esign dummy password', sync));
    await verifyWith(dummy, password, sync);
    return false;
  }
  return verifyWith(parsed, password, sync);
}

async function verifyWith(parsed, password, sync) {
  const { m, t, p } = parsed.params;
  const want = new Uint8Array(parsed.hash);
  const got = await (sync ? argon2id : argon2idAsync)(password, new Uint8Array(parsed.salt), { m: +m, t: +t, p: +p, dkLen: want.length });
  // Constant time over the length: every byte is compared.
  let diff = 0;
  for (let i = 0; i < want.length; i++) diff |= got[i] ^ want[i];
  return diff === 0;
}
