//! Many time-ordered queues under one prefix, visited fairly: keys are
//! `<prefix><name><due ms, 8 bytes BE><id>`, one queue per name (a webhook target, a
//! tenant's host work). A pass visits the queues in a ring with one seek each, starting
//! where the previous pass stopped, so a queue with a large backlog costs a pass no
//! more than an empty one and every queue gets its turn. [`renewing`] keeps a worker's
//! lease on a row while slow work on it runs.

use crate::store::Store;
use sha2::{Digest, Sha256};

/// Length of a queue name: 16 hex digits.
pub const NAME_LEN: usize = 16;

/// The fixed-width queue name for `what` (16 hex digits of its SHA-256).
pub fn name_of(what: &str) -> Vec<u8> {
    Sha256::digest(what.as_bytes())[..NAME_LEN / 2]
        .iter()
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect()
}

/// `<prefix><name>`: the start of one queue.
pub fn queue(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(name);
    k
}

/// The key of entry `id` due at `due_ms` in queue `name`.
pub fn key(prefix: &[u8], name: &[u8], due_ms: u64, id: &str) -> Vec<u8> {
    let mut k = queue(prefix, name);
    k.extend_from_slice(&due_ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// When the entry at `key` of the queue starting with `queue` is due.
pub fn due_of(queue: &[u8], key: &[u8]) -> anyhow::Result<u64> {
    let at = queue.len();
    let bytes = key
        .get(at..at + 8)
        .ok_or_else(|| anyhow::anyhow!("a queue key too short for its due time"))?;
    Ok(u64::from_be_bytes(bytes.try_into()?))
}

/// `key` with one more byte of `0xff`: the end of the range of keys it prefixes.
pub fn range_end(key: &[u8]) -> Vec<u8> {
    let mut end = key.to_vec();
    end.push(0xff);
    end
}

/// What a visitor wants after a queue.
pub enum Visit {
    /// Go on to the next queue.
    Next,
    /// End the pass; the next one starts at this queue.
    Stop,
}

/// Visits each queue under `prefix` once, in name order from `*cursor` (the whole
/// ring, wrapping around), at most `max` of them; `visit` gets each queue's name.
/// Leaves in `*cursor` the queue the next pass starts at (empty: the first). Returns
/// whether the pass was cut short by `max`, so that another should follow soon.
pub fn visit_ring(
    store: &Store,
    prefix: &[u8],
    cursor: &mut Vec<u8>,
    max: usize,
    mut visit: impl FnMut(&[u8]) -> anyhow::Result<Visit>,
) -> anyhow::Result<bool> {
    let first = std::mem::take(cursor);
    let all_end = range_end(prefix);
    let mut start = queue(prefix, &first);
    let mut wrapped = first.is_empty();
    let mut visited = 0;
    loop {
        let Some((key, _)) = store
            .scan_committed(&start, &all_end, 1)?
            .into_iter()
            .next()
        else {
            if wrapped {
                return Ok(false);
            }
            wrapped = true;
            start = prefix.to_vec();
            continue;
        };
        let Some(name) = key.get(prefix.len()..prefix.len() + NAME_LEN) else {
            anyhow::bail!("a queue key without a name under {prefix:?}");
        };
        if wrapped && !first.is_empty() && name >= first.as_slice() {
            return Ok(false); // the whole ring was visited
        }
        if visited == max {
            *cursor = name.to_vec();
            return Ok(true);
        }
        visited += 1;
        start = range_end(&queue(prefix, name));
        if let Visit::Stop = visit(name)? {
            *cursor = name.to_vec();
            return Ok(false);
        }
    }
}

/// Runs `work` while renewing the lease on `key` every third of its length (on a
/// shared store; on sled the lease is the process's own). A lost lease is only logged:
/// the outcome's transaction checks the lease and records nothing then.
pub async fn renewing<T>(
    store: &std::sync::Arc<Store>,
    key: &[u8],
    lease: &crate::store::Lease,
    work: impl std::future::Future<Output = T>,
) -> T {
    if !store.shared() {
        return work.await;
    }
    let every = store.lease_duration() / 3;
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep(every) => {
                let (s, k, l) = (store.clone(), key.to_vec(), lease.clone());
                match tokio::task::spawn_blocking(move || s.renew(&k, &l)).await {
                    Ok(Ok(true)) => {}
                    Ok(Ok(false)) => tracing::warn!("a lease was lost while its work ran"),
                    Ok(Err(e)) => tracing::warn!("renewing a lease: {e:#}"),
                    Err(e) => tracing::warn!("renewing a lease: {e}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_visits_each_queue_once_and_the_next_starts_where_it_stopped() {
        let dir = std::env::temp_dir().join(format!("esign-queues-{}", crate::ids::random_id()));
        let store = Store::new(crate::store::sled::SledBackend::open(&dir).unwrap());
        let names: Vec<Vec<u8>> = ["a", "b", "c"].iter().map(|n| name_of(n)).collect();
        let mut txn = store.begin();
        for name in &names {
            for i in 0..100u64 {
                txn.put(&key(b"q/", name, i, &format!("{i}")), b"");
            }
        }
        txn.commit().unwrap();
        let mut sorted = names.clone();
        sorted.sort();
        let mut cursor = Vec::new();
        let mut seen = Vec::new();
        let more = visit_ring(&store, b"q/", &mut cursor, 10, |n| {
            seen.push(n.to_vec());
            Ok(Visit::Next)
        })
        .unwrap();
        assert!(!more);
        assert_eq!(seen, sorted);
        assert!(cursor.is_empty());
        // Stop at the second: the next pass starts there and wraps around.
        let mut seen = Vec::new();
        visit_ring(&store, b"q/", &mut cursor, 10, |n| {
            seen.push(n.to_vec());
            Ok(if seen.len() == 2 {
                Visit::Stop
            } else {
                Visit::Next
            })
        })
        .unwrap();
        assert_eq!(cursor, sorted[1]);
        let mut seen = Vec::new();
        visit_ring(&store, b"q/", &mut cursor, 10, |n| {
            seen.push(n.to_vec());
            Ok(Visit::Next)
        })
        .unwrap();
        assert_eq!(
            seen,
            [sorted[1].clone(), sorted[2].clone(), sorted[0].clone()]
        );
        // Cut short by `max`.
        let mut seen = 0;
        assert!(
            visit_ring(&store, b"q/", &mut cursor, 2, |_| {
                seen += 1;
                Ok(Visit::Next)
            })
            .unwrap()
        );
        assert_eq!((seen, cursor.clone()), (2, sorted[2].clone()));
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
}
