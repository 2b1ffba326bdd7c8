//! The esign engine as a WASI component: implements the `esign:engine/esign` world of
//! `wit/esign.wit` by converting between the generated WIT types and `esign-engine`'s
//! own (the work types with `esign_work::convert_wit!`), and by implementing
//! [`esign_engine::Platform`] with the world's imports.
//!
//! The component is `no_std`: it imports only its own interfaces plus
//! `wasi:clocks/wall-clock` and `wasi:random/random`, so instantiating it links a handful
//! of functions rather than the whole WASI surface that `std` brings. Memory comes from
//! a bump allocator, since an instance lives for exactly one call.

#![no_std]
// The generated bindings take one argument per field of a flattened record.
#![allow(clippy::too_many_arguments)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

wit_bindgen::generate!({
    world: "esign",
    path: "../../wit",
    generate_all,
});

use esign::engine::{effects, files, host, store, types};
use esign_engine as core_engine;
use wasi::clocks::wall_clock;
use wasi::random::random;

struct Component;

impl Guest for Component {
    fn handle(req: types::Request) -> types::Response {
        let req = core_engine::Request {
            method: req.method,
            path: req.path,
            query: req.query,
            headers: req.headers,
            body: req.body,
            parts: req
                .parts
                .into_iter()
                .map(|p| core_engine::FormPart {
                    name: p.name,
                    filename: p.filename,
                    content_type: p.content_type,
                    data: p.data,
                    staged: p.staged.map(Into::into),
                })
                .collect(),
            origin: match req.origin {
                types::Origin::Http => core_engine::Origin::Http,
                types::Origin::Admin => core_engine::Origin::Admin,
            },
            remote_addr: req.remote_addr,
        };
        let resp = core_engine::handle(&mut Imports, &req);
        types::Response {
            status: resp.status,
            headers: resp.headers,
            body: resp.body,
        }
    }

    fn run_job(job: types::Job) -> types::JobOutcome {
        let job = core_engine::Job {
            id: job.id,
            kind: job.kind,
            payload: job.payload,
            attempt: job.attempt,
            outcome: job.outcome.map(Into::into),
        };
        match core_engine::run_job(&mut Imports, &job) {
            core_engine::JobOutcome::Done => types::JobOutcome::Done,
            core_engine::JobOutcome::RetryAt(ms) => types::JobOutcome::RetryAt(ms),
            core_engine::JobOutcome::Failed(why) => types::JobOutcome::Failed(why),
        }
    }
}

/// [`core_engine::Platform`] over the world's imports.
struct Imports;

impl core_engine::Platform for Imports {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        store::get(key)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        store::put(key, value)
    }

    fn delete(&mut self, key: &[u8]) {
        store::delete(key)
    }

    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        store::scan(start, end, limit, reverse)
    }

    fn put_blob(&mut self, data: &[u8]) -> Result<core_engine::BlobInfo, String> {
        files::put(data).map(Into::into)
    }

    fn keep_staged(&mut self, id: &str) -> Result<core_engine::BlobInfo, String> {
        files::keep(id).map(Into::into)
    }

    fn get_blob(&mut self, id: &str) -> Option<Vec<u8>> {
        files::get(id)
    }

    fn delete_blob(&mut self, id: &str) {
        files::delete(id)
    }

    fn emit_event(&mut self, e: core_engine::Event, deliveries: Vec<core_engine::Delivery>) {
        let deliveries: Vec<effects::Delivery> = deliveries
            .into_iter()
            .map(|d| effects::Delivery {
                subscription_id: d.subscription_id,
                target_url: d.target_url,
                secret: d.secret,
                body: d.body,
                entity_id: d.entity_id,
            })
            .collect();
        effects::emit_event(
            &effects::Event {
                id: e.id,
                kind: e.kind,
                entity_id: e.entity_id,
                user_id: e.user_id,
                payload: e.payload,
            },
            &deliveries,
        )
    }

    fn cancel_deliveries(&mut self, subscription_id: &str) {
        effects::cancel_deliveries(subscription_id)
    }

    fn pending_deliveries(
        &mut self,
        subscription_id: &str,
        target_url: &str,
        limit: u32,
    ) -> Vec<core_engine::PendingDelivery> {
        effects::pending_deliveries(subscription_id, target_url, limit)
            .into_iter()
            .map(|d| core_engine::PendingDelivery {
                event_id: d.event_id,
                event: d.event,
                attempts: d.attempts,
                last_error: d.last_error,
                queued_at_ms: d.queued_at_ms,
                next_attempt_at_ms: d.next_attempt_at_ms,
            })
            .collect()
    }

    fn schedule_job(&mut self, j: core_engine::JobSpec) -> String {
        effects::schedule_job(&effects::JobSpec {
            kind: j.kind,
            payload: j.payload,
            run_at_ms: j.run_at_ms,
            work: j.work.map(Into::into),
            scope: j.scope,
        })
    }

    fn send_mail(&mut self, m: core_engine::Mail) {
        effects::send_mail(&effects::Mail {
            to: m.to,
            subject: m.subject,
            body: m.body,
            tag: m.tag,
            html: m.html,
            attachments: m
                .attachments
                .into_iter()
                .map(|a| effects::MailAttachment {
                    name: a.name,
                    content_type: a.content_type,
                    blob: a.blob,
                })
                .collect(),
        })
    }

    fn send_sms(&mut self, m: core_engine::Sms) {
        effects::send_sms(&effects::Sms {
            to: m.to,
            text: m.text,
            tag: m.tag,
        })
    }

    fn eid_start(&mut self, session: &str, return_url: &str) -> Result<String, String> {
        host::eid_start(session, return_url)
    }

    fn eid_finish(
        &mut self,
        session: &str,
        query: &str,
    ) -> Result<core_engine::EidIdentity, String> {
        host::eid_finish(session, query).map(|i| core_engine::EidIdentity {
            name: i.name,
            subject: i.subject,
        })
    }

    fn settings(&mut self) -> core_engine::Settings {
        let s = host::get_settings();
        let policy = core_engine::policy::Overrides {
            token_ttl_secs: s.token_ttl_secs,
            login_max_failures: s.login_max_failures,
            login_lock_secs: s.login_lock_secs,
            token_min_interval_ms: s.token_min_interval_ms,
            upload_ttl_secs: s.upload_ttl_secs,
            oauth_access_ttl_secs: s.oauth_access_ttl_secs,
            completion_attachment_max_bytes: s.completion_attachment_max_bytes,
            completion_link_days: s.completion_link_days,
        }
        .resolve();
        core_engine::Settings {
            base_url: s.base_url,
            can_convert_word: s.can_convert_word,
            blob_responses: s.blob_responses,
            eid_provider: s.eid_provider,
            signing_certificate: s.signing_certificate,
            mcp_test_user: s.mcp_test_user,
            link_key: s.link_key,
            ..core_engine::Settings::with_policy(policy)
        }
    }

    fn fetch_client_metadata(&mut self, url: &str) -> Result<String, String> {
        host::fetch_client_metadata(url)
    }

    fn verify_pdf(&mut self, data: &[u8]) -> core_engine::PdfCheck {
        host::verify_pdf(data).into()
    }

    fn hash_password(&mut self, password: &str) -> String {
        host::hash_password(password)
    }

    fn verify_password(&mut self, password: &str, hash: &str) -> bool {
        host::verify_password(password, hash)
    }

    fn now_ms(&mut self) -> u64 {
        let t = wall_clock::now();
        t.seconds * 1000 + u64::from(t.nanoseconds / 1_000_000)
    }

    fn fill_random(&mut self, buf: &mut [u8]) {
        let bytes = random::get_random_bytes(buf.len() as u64);
        buf.copy_from_slice(&bytes[..buf.len()]);
    }
}

// The work orders, outcomes, blob infos and PDF checks: `esign-work`'s types, which the
// engine uses, to and from the WIT's.
esign_work::convert_wit!(types);

/// Hands the panic message to the host, then traps: the host rolls the call back and
/// answers 500 with a trace id under which it logged the message.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    host::log_error(&alloc::format!("engine panicked: {info}"));
    core::arch::wasm32::unreachable()
}

/// The canonical ABI's allocation entry point, which `std` would provide on wasip2: the
/// host calls it to place strings and lists in this instance's memory.
///
/// # Safety
/// Called by the host per the component model's canonical ABI: `old_ptr`/`old_len`/
/// `align` describe an earlier allocation (or `old_len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{Layout, alloc, realloc};
    let ptr = unsafe {
        if old_len == 0 {
            if new_len == 0 {
                return align as *mut u8;
            }
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable();
    }
    ptr
}

/// `memcmp` for the `no_std` build: on WASI targets `compiler_builtins` leaves it to
/// libc, which this component does not link. Compares eight bytes at a time (unaligned
/// 64-bit loads are single instructions in wasm) up to the first differing word.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller promises `n` readable bytes behind each pointer.
    let mut i = unsafe { equal_words(a, b, n) };
    while i < n {
        // SAFETY: as above, `i < n`.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

/// `bcmp`: equality-only `memcmp`, which LLVM calls for `==` on slices and strings.
///
/// # Safety
/// As for [`memcmp`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { memcmp(a, b, n) }
}

/// How many leading bytes of `a` and `b` are equal in whole eight-byte words: the
/// offset of the first word that differs, or of the last incomplete word.
///
/// # Safety
/// As for [`memcmp`].
unsafe fn equal_words(a: *const u8, b: *const u8, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` bytes are readable behind each pointer.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            break;
        }
        i += 8;
    }
    i
}

/// A bump allocator for one-call instances: allocation moves a pointer; only the most
/// recent allocation can be freed or grown in place; the rest is reclaimed when the
/// instance ends. It starts in a 256 KiB arena in the data segment (no `memory.grow` for
/// small calls) and grows linear memory when that runs out. The arena is part of every
/// instance's initial memory, whose page table the reset after each call walks: 1 MiB
/// cost about 0.5 µs a call more (with the 1 MiB stack, see `build.rs`).
mod bump {
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;

    const ARENA_SIZE: usize = 256 << 10;
    const PAGE: usize = 64 * 1024;

    #[repr(C, align(16))]
    struct Arena(UnsafeCell<[u8; ARENA_SIZE]>);

    struct Bump {
        arena: Arena,
        /// (next free address, end of the current region); 0 before the first use.
        state: UnsafeCell<(usize, usize)>,
    }

    // SAFETY: a component instance is single-threaded.
    unsafe impl Sync for Bump {}

    #[global_allocator]
    static ALLOCATOR: Bump = Bump {
        arena: Arena(UnsafeCell::new([0; ARENA_SIZE])),
        state: UnsafeCell::new((0, 0)),
    };

    impl Bump {
        /// Reserves `layout` and returns its address, or null when memory is exhausted.
        unsafe fn bump(&self, layout: Layout) -> *mut u8 {
            // SAFETY: single-threaded; no reference to `state` outlives this call.
            let (next, end) = unsafe { &mut *self.state.get() };
            if *end == 0 {
                *next = self.arena.0.get() as usize;
                *end = *next + ARENA_SIZE;
            }
            let start = (*next + layout.align() - 1) & !(layout.align() - 1);
            let Some(new_next) = start.checked_add(layout.size()) else {
                return core::ptr::null_mut();
            };
            if new_next <= *end {
                *next = new_next;
                return start as *mut u8;
            }
            // Out of room: continue in fresh pages at the end of linear memory.
            let pages = (layout.size() + layout.align()).div_ceil(PAGE).max(16);
            let old = core::arch::wasm32::memory_grow(0, pages);
            if old == usize::MAX {
                return core::ptr::null_mut();
            }
            let base = old * PAGE;
            let start = (base + layout.align() - 1) & !(layout.align() - 1);
            *next = start + layout.size();
            *end = base + pages * PAGE;
            start as *mut u8
        }
    }

    unsafe impl GlobalAlloc for Bump {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { self.bump(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: single-threaded.
            let (next, _) = unsafe { &mut *self.state.get() };
            if ptr as usize + layout.size() == *next {
                *next = ptr as usize;
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: single-threaded.
            let (next, end) = unsafe { &mut *self.state.get() };
            if ptr as usize + layout.size() == *next && ptr as usize + new_size <= *end {
                *next = ptr as usize + new_size;
                return ptr;
            }
            let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
                return core::ptr::null_mut();
            };
            let new = unsafe { self.bump(new_layout) };
            if !new.is_null() {
                // SAFETY: both regions are valid for the smaller size and do not overlap.
                unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            }
            new
        }
    }
}

export!(Component);
