// The Durable Object's SQLite tables, and the rows the engine's imports write.
//
// - kv: the engine's store (`esign:engine/store`): byte keys, which SQLite orders
//   bytewise as the WIT asks.
// - blob: the engine's files, in chunks of 1 MiB (a SQL value is limited to 2 MB).
// - job: scheduled jobs; a job with a work order is leased to the Queue consumer while
//   its work is done (`lease`, `lease_until`); dead_job keeps those the engine gave up.
// - delivery: webhook deliveries, due at `due`; mail: mail and text messages, due at
//   `due`; dead_mail those given up.
// - meta: the sealing key and the recipient link key when generated here, the first-run
//   flag, the base URL.

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blob (id TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (id, n)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS job (
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, payload BLOB NOT NULL, run_at INTEGER NOT NULL,
  attempt INTEGER NOT NULL, work TEXT, scope TEXT NOT NULL,
  lease TEXT, lease_until INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS job_due ON job (run_at);
CREATE TABLE IF NOT EXISTS dead_job (id TEXT PRIMARY KEY, kind TEXT NOT NULL, payload BLOB NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS delivery (
  id TEXT PRIMARY KEY, subscription_id TEXT NOT NULL, target_url TEXT NOT NULL, secret TEXT NOT NULL,
  body TEXT NOT NULL, entity_id TEXT NOT NULL, event_id TEXT NOT NULL, event TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, first_attempt_ms INTEGER, due INTEGER NOT NULL, last_error TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS delivery_due ON delivery (due);
CREATE TABLE IF NOT EXISTS mail (
  id TEXT PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, subject TEXT NOT NULL,
  body TEXT NOT NULL, tag TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, due INTEGER NOT NULL,
  last_error TEXT NOT NULL DEFAULT '', html TEXT NOT NULL DEFAULT '', attachments TEXT NOT NULL DEFAULT '[]');
CREATE INDEX IF NOT EXISTS mail_due ON mail (due);
CREATE TABLE IF NOT EXISTS dead_mail (
  id TEXT PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, subject TEXT NOT NULL,
  body TEXT NOT NULL, tag TEXT NOT NULL, attempts INTEGER NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
`;

/** A blob is kept in chunks of this many bytes. */
export const CHUNK = 1 << 20;

/** Brings tables made by an earlier version up to SCHEMA: columns added since. */
export function migrate(sql) {
  const columns = sql.exec('PRAGMA table_info(mail)').toArray().map((c) => c.name);
  if (!columns.includes('html')) sql.exec("ALTER TABLE mail ADD COLUMN html TEXT NOT NULL DEFAULT ''");
  if (!columns.includes('attachments')) sql.exec("ALTER TABLE mail ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]'");
}

export function meta(sql, k) {
  return sql.exec('SELECT v FROM meta WHERE k = ?', k).toArray()[0]?.v;
}

export function setMeta(sql, k, v) {
  sql.exec('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)', k, v);
}

/** Schedules job `kind` now (the host's own jobs: webhook.dead, webhook.gone,
 *  mail.bounced). */
export function hostJob(sql, id, kind, payload, now) {
  sql.exec('INSERT INTO job (id, kind, payload, run_at, attempt, work, scope) VALUES (?, ?, ?, ?, 1, NULL, ?)', id, kind, payload, now, '');
}

export function putBlob(sql, id, data) {
  for (let i = 0, n = 0; i < data.length || n === 0; i += CHUNK, n++) {
    sql.exec('INSERT INTO blob (id, n, data) VALUES (?, ?, ?)', id, n, data.subarray(i, i + CHUNK));
  }
}

export function getBlob(sql, id) {
  const rows = sql.exec('SELECT data FROM blob WHERE id = ? ORDER BY n', id).toArray();
  if (!rows.length) return undefined;
  const parts = rows.map((r) => new Uint8Array(r.data));
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
