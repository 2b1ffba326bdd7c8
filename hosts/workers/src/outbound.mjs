// What leaves the Worker after a commit: webhook deliveries and mail and text messages,
// at least once, from the rows the engine's calls wrote (imports.mjs). The object's
// alarm attempts the due rows (`fetch`, outside any transaction), then records all the
// results in one transaction: a crash in between repeats an attempt, never loses one.
//
// Webhooks as the Rust host sends them (host/src/webhooks.rs): Standard Webhooks
// headers (`webhook-id` the event id, `webhook-timestamp`, `webhook-signature` `v1,` +
// base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with the secret after `whsec_`,
// through WebCrypto); 2xx is delivered, 410 disables the subscription (job
// `webhook.gone`), anything else is retried on the schedule (±20 %) and after its last
// step is a dead letter (job `webhook.dead`). Redirects are not followed.
//
// Mail and SMS: a JSON POST to the configured HTTP API (ESIGN_MAIL_URL: `{from, to,
// subject, text, tag}`, and `html` when the mail has an HTML part, `attachments`
// (`[{filename, content_type, content}]`, content in base64) when it has files; ESIGN_SMS_URL:
// `{to, text}`, as the Rust host's SMS gateway),
// with `authorization: Bearer` the configured token. 2xx is sent; 400, 404, 410 or 422
// is a permanent refusal (given up at once, and for tagged mail job `mail.bounced`);
// anything else is retried with exponential backoff, at most 20 attempts.

import { getBlob, hostJob } from './tables.mjs';
import { randomId } from './bytes.mjs';

/** The Rust host's default retry schedule: 14 retries over about three days. */
const DEFAULT_SCHEDULE = '5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,12h,12h,12h,12h';
const MAIL_ATTEMPTS = 20;
/** Rows attempted per alarm, at most. */
const BATCH = 32;

/** `5s,30s,2m,1h` (units ms, s, m, h) as milliseconds. */
export function parseSchedule(text) {
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return text.split(',').map((step) => {
    const m = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(step);
    if (!m) throw new Error(`ESIGN_WEBHOOK_RETRY_SCHEDULE: "${step}" is not a delay such as 30s`);
    return Number(m[1]) * unit[m[2]];
  });
}

export function schedule(env) {
  return parseSchedule(env.ESIGN_WEBHOOK_RETRY_SCHEDULE || DEFAULT_SCHEDULE);
}

const jitter = (ms) => Math.round(ms * (0.8 + Math.random() * 0.4));
const timeout = (env, name, secs) => AbortSignal.timeout(1000 * Number(env[name] || secs));

/** Attempts the due webhook deliveries; returns how many. */
export async function deliverWebhooks(ctx, env) {
  const sql = ctx.storage.sql;
  const rows = sql.exec('SELECT * FROM delivery WHERE due <= ? ORDER BY due LIMIT ?', Date.now(), BATCH).toArray();
  if (!rows.length) return 0;
  const results = await Promise.all(rows.map((row) => attemptWebhook(env, row)));
  const steps = schedule(env);
  ctx.storage.transactionSync(() => {
    const now = Date.now();
    rows.forEach((row, i) => {
      // Cancelled meanwhile (subscription deleted or disabled): nothing to record.
      if (!sql.exec('SELECT 1 FROM delivery WHERE id = ?', row.id).toArray().length) return;
      const outcome = results[i];
      const attempts = row.attempts + 1;
      const first = row.first_attempt_ms ?? now;
      if (outcome === 'delivered') {
        sql.exec('DELETE FROM delivery WHERE id = ?', row.id);
      } else if (outcome === 'gone') {
        console.warn(`webhook target ${row.target_url} answered 410 Gone`);
        sql.exec('DELETE FROM delivery WHERE id = ?', row.id);
        hostJob(sql, randomId(), 'webhook.gone', new TextEncoder().encode(row.subscription_id), now);
      } else if (attempts <= steps.length) {
        sql.exec(
          'UPDATE delivery SET attempts = ?, first_attempt_ms = ?, due = ?, last_error = ? WHERE id = ?',
          attempts, first, now + jitter(steps[attempts - 1]), outcome.failed, row.id,
        );
      } else {
        console.warn(`webhook to ${row.target_url} given up after ${attempts} attempts: ${outcome.failed}`);
        sql.exec('DELETE FROM delivery WHERE id = ?', row.id);
        const dead = {
          subscription_id: row.subscription_id, entity_id: row.entity_id, event_id: row.event_id, event: row.event,
          target_url: row.target_url, attempts, last_error: outcome.failed, first_attempt_ms: first,
          body: row.body, // kept by the engine for a retry
        };
        hostJob(sql, randomId(), 'webhook.dead', new TextEncoder().encode(JSON.stringify(dead)), now);
      }
    });
  });
  return rows.length;
}

async function attemptWebhook(env, row) {
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const res = await fetch(row.target_url, {
      method: 'POST',
      redirect: 'manual',
      signal: timeout(env, 'ESIGN_WEBHOOK_TIMEOUT_SECS', 15),
      headers: {
        'content-type': 'application/json',
        'webhook-id': row.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': await sign(row.secret, row.event_id, timestamp, row.body),
      },
      body: row.body,
    });
    await res.body?.cancel();
    if (res.status >= 200 && res.status < 300) return 'delivered';
    if (res.status === 410) return 'gone';
    if (res.status >= 300 && res.status < 400) return { failed: `answered ${res.status} (redirects are not followed)` };
    return { failed: `answered ${res.status}` };
  } catch (e) {
    return { failed: `${e?.message ?? e}` };
  }
}

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the base64
 *  after `whsec_` (Standard Webhooks). */
export async function sign(secret, id, timestamp, body) {
  const raw = Uint8Array.from(atob(secret.replace(/^whsec_/, '')), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`;
}

/** Whether Standard Webhooks headers `headers` sign `body` with `secret` (within five
 *  minutes): how the mail provider's bounce notices are checked. */
export async function verifySigned(secret, headers, body) {
  const id = headers.get('webhook-id');
  const ts = Number(headers.get('webhook-timestamp'));
  const given = (headers.get('webhook-signature') ?? '').split(' ');
  if (!id || !Number.isFinite(ts) || Math.abs(Date.now() / 1000 - ts) > 300) return false;
  const want = await sign(secret, id, ts, body);
  return given.some((g) => timingSafeEqual(g, want));
}

function timingSafeEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** Sends the due mail and text messages; returns how many were attempted. */
export async function sendMail(ctx, env) {
  const sql = ctx.storage.sql;
  const rows = sql.exec('SELECT * FROM mail WHERE due <= ? ORDER BY due LIMIT ?', Date.now(), BATCH).toArray();
  if (!rows.length) return 0;
  const results = await Promise.all(rows.map((row) => attemptMail(env, row, attachedFiles(sql, row))));
  ctx.storage.transactionSync(() => {
    const now = Date.now();
    rows.forEach((row, i) => {
      const outcome = results[i];
      const attempts = row.attempts + 1;
      const what = row.channel === 'sms' ? 'text message' : 'mail';
      if (outcome === 'sent') {
        sql.exec('DELETE FROM mail WHERE id = ?', row.id);
      } else if (outcome.permanent || attempts >= MAIL_ATTEMPTS) {
        const why = outcome.permanent ?? outcome.failed;
        console.error(`${what} to ${row.recipient} given up after ${attempts} attempts: ${why}`);
        sql.exec('DELETE FROM mail WHERE id = ?', row.id);
        sql.exec(
          'INSERT INTO dead_mail (id, channel, recipient, subject, body, tag, attempts, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          row.id, row.channel, row.recipient, row.subject, row.body, row.tag, attempts, why, now,
        );
        if (outcome.permanent && row.tag && row.channel === 'mail') {
          hostJob(sql, randomId(), 'mail.bounced', new TextEncoder().encode(`${row.tag}\n${why}`), now);
        }
      } else {
        const delay = 1000 * 2 ** Math.min(attempts, 12);
        console.warn(`${what} to ${row.recipient} failed, retrying in ${delay / 1000} s: ${outcome.failed}`);
        sql.exec('UPDATE mail SET attempts = ?, due = ?, last_error = ? WHERE id = ?', attempts, now + delay, outcome.failed, row.id);
      }
    });
  });
  return rows.length;
}

/** A mail's attachments with their bytes in base64 (`{filename, content_type, content}`);
 *  one whose blob is gone (its document erased meanwhile) is left out. */
function attachedFiles(sql, row) {
  const out = [];
  for (const a of JSON.parse(row.attachments || '[]')) {
    const bytes = getBlob(sql, a.blob);
    if (!bytes) continue;
    let text = '';
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    out.push({ filename: a.name, content_type: a.contentType, content: btoa(text) });
  }
  return out;
}

async function attemptMail(env, row, attachments) {
  const sms = row.channel === 'sms';
  const url = sms ? env.ESIGN_SMS_URL : env.ESIGN_MAIL_URL;
  if (!url) {
    // Nowhere to send: logged, as the Rust host's folder transport keeps it readable.
    console.log(`${sms ? 'SMS' : 'mail'} to ${row.recipient} (no ${sms ? 'ESIGN_SMS_URL' : 'ESIGN_MAIL_URL'}): ${row.subject} ${row.body}`);
    return 'sent';
  }
  const token = sms ? env.ESIGN_SMS_TOKEN : env.ESIGN_MAIL_TOKEN;
  const body = sms
    ? { to: row.recipient, text: row.body }
    : {
        from: env.ESIGN_MAIL_FROM || 'esign <noreply@esign.local>',
        to: row.recipient,
        subject: row.subject,
        text: row.body,
        tag: row.tag,
        ...(row.html ? { html: row.html } : {}),
        ...(attachments.length ? { attachments } : {}),
      };
  try {
    const res = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      signal: timeout(env, 'ESIGN_MAIL_TIMEOUT_SECS', 30),
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 200 && res.status < 300) return 'sent';
    if ([400, 404, 410, 422].includes(res.status)) return { permanent: `refused (${res.status}): ${text.slice(0, 200)}` };
    return { failed: `answered ${res.status}` };
  } catch (e) {
    return { failed: `${e?.message ?? e}` };
  }
}
