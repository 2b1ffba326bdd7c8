// The engine's imports (wit/esign.wit) inside the Durable Object, for one call. Every
// write goes straight to SQLite inside the call's `transactionSync`, so a call that
// throws (a trap, a 503, a password it must not compute here) leaves nothing behind:
//
// - store: the `kv` table; files: chunked `blob` rows;
// - effects: rows in the same transaction (`delivery`, `job`, `mail`), which the
//   object's alarm delivers and runs after the commit: the transactional outbox of
//   wit/README.md;
// - host: settings from the Worker's environment; passwords through `Answers` (computed
//   outside the object, see passwords.mjs); `verify-pdf` by the formats component; no
//   eID and no outbound metadata fetches (each answers the WIT's error).

import { getBlob, putBlob } from './tables.mjs';
import { randomBytes, randomId, sha256Hex } from './bytes.mjs';

/** The imports of one call: `cx` is `{ sql, settings, answers, checkPdf, now, faults }`
 *  (`faults`: test faults, `{ trapOnPut: n, blobsUnavailable }`, only with
 *  ESIGN_TEST_FAULTS set, as the Rust host's `x-esign-test-fault`). */
export function engineImports(cx) {
  const { sql } = cx;
  const imports = {
    'esign:engine/types': {},
    'esign:engine/store': {
      get: (k) => {
        const r = sql.exec('SELECT v FROM kv WHERE k = ?', k).toArray();
        return r.length ? new Uint8Array(r[0].v) : undefined;
      },
      put(k, v) {
        cx.puts = (cx.puts ?? 0) + 1;
        if (cx.faults?.trapOnPut === cx.puts) throw new Error(`test fault: trap on store.put #${cx.puts}`);
        sql.exec('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)', k, v);
      },
      delete: (k) => void sql.exec('DELETE FROM kv WHERE k = ?', k),
      scan: (start, end, limit, reverse) =>
        sql
          .exec(`SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k ${reverse ? 'DESC' : 'ASC'} LIMIT ?`, start, end, limit)
          .toArray()
          .map((r) => [new Uint8Array(r.k), new Uint8Array(r.v)]),
    },
    'esign:engine/files': {
      put(data) {
        if (cx.faults?.blobsUnavailable) throw 'blob storage is unavailable (a test fault)';
        const id = randomId();
        putBlob(sql, id, data);
        return { id, size: BigInt(data.length), sha256: sha256Hex(data) };
      },
      // Nothing is staged here (form-parts.mjs passes every part whole).
      keep(id) {
        throw `the request staged no file part ${id}`;
      },
      get: (id) => getBlob(sql, id),
      delete: (id) => void sql.exec('DELETE FROM blob WHERE id = ?', id),
    },
    'esign:engine/effects': {
      emitEvent(event, deliveries) {
        for (const d of deliveries) {
          sql.exec(
            'INSERT INTO delivery (id, subscription_id, target_url, secret, body, entity_id, event_id, event, due) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
            randomId(), d.subscriptionId, d.targetUrl, d.secret, d.body, d.entityId, event.id, event.kind, cx.now,
          );
        }
      },
      cancelDeliveries: (sub) => void sql.exec('DELETE FROM delivery WHERE subscription_id = ?', sub),
      pendingDeliveries: (sub, _targetUrl, limit) => sql
        .exec('SELECT event_id, event, attempts, last_error, COALESCE(first_attempt_ms, due) AS queued, due FROM delivery WHERE subscription_id = ? ORDER BY due LIMIT ?', sub, limit)
        .toArray()
        .map((r) => ({
          eventId: r.event_id, event: r.event, attempts: r.attempts, lastError: r.last_error,
          queuedAtMs: BigInt(r.queued), nextAttemptAtMs: BigInt(r.due),
        })),
      scheduleJob(spec) {
        const id = randomId();
        sql.exec(
          'INSERT INTO job (id, kind, payload, run_at, attempt, work, scope) VALUES (?, ?, ?, ?, 1, ?, ?)',
          id, spec.kind, spec.payload, Number(spec.runAtMs), spec.work ? JSON.stringify(spec.work) : null, spec.scope,
        );
        return id;
      },
      sendMail: (m) => mailRow(sql, 'mail', m.to, m.subject, m.body, m.tag, cx.now, m.html, m.attachments),
      sendSms: (s) => mailRow(sql, 'sms', s.to, '', s.text, s.tag, cx.now, '', []),
    },
    'esign:engine/host': {
      getSettings: () => cx.settings,
      hashPassword: (password) => cx.answers.hash(password),
      verifyPassword: (password, hash) => cx.answers.verify(password, hash),
      logError: (message) => console.error(`engine: ${message}`),
      eidStart() {
        throw 'this host has no eID provider';
      },
      eidFinish() {
        throw 'this host has no eID provider';
      },
      verifyPdf: (data) => cx.checkPdf(data),
      fetchClientMetadata() {
        throw 'this host fetches no client metadata';
      },
    },
    'wasi:clocks/wall-clock': {
      now() {
        const ms = BigInt(Date.now());
        return { seconds: ms / 1000n, nanoseconds: Number(ms % 1000n) * 1e6 };
      },
      resolution: () => ({ seconds: 0n, nanoseconds: 1e6 }),
    },
    'wasi:random/random': {
      getRandomBytes: (n) => randomBytes(Number(n)),
      getRandomU64: () => crypto.getRandomValues(new BigUint64Array(1))[0],
    },
  };
  return imports;
}

// Attachments are kept by blob (`{name, contentType, blob}`); outbound.mjs reads their
// bytes when it sends.
function mailRow(sql, channel, to, subject, body, tag, now, html, attachments) {
  sql.exec(
    'INSERT INTO mail (id, channel, recipient, subject, body, tag, due, html, attachments) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    randomId(), channel, to, subject, body, tag, now, html, JSON.stringify(attachments ?? []),
  );
}
