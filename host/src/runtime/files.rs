//! The `files` interface: blobs, under `b/`, in the call's transaction.

use super::CallState;
use crate::bindings::{BlobInfo, files};
use crate::host_tables::keys;
use crate::ids::{random_id, sha256_hex};
use crate::staged_parts;

/// The trap a call stops with when it must move off the tokio worker.
const MOVE_OFF_WORKER: &str = "the call reads a blob: re-run off the tokio worker";

impl files::Host for CallState {
    fn put(&mut self, data: Vec<u8>) -> wasmtime::Result<Result<BlobInfo, String>> {
        self.may_write()?;
        if self.faults.blobs_unavailable {
            return Ok(Err("test fault: blob storage unavailable".into()));
        }
        Ok(Ok(self.put_blob(data)))
    }

    /// The bytes of the request's staged part `id` ([`crate::staged_parts`]) written as
    /// blob `id`, as `put` would: copied into the transaction, so that a call run again
    /// (after a conflict) finds the part still staged.
    fn keep(&mut self, id: String) -> wasmtime::Result<Result<BlobInfo, String>> {
        self.may_write()?;
        if self.faults.blobs_unavailable {
            return Ok(Err("test fault: blob storage unavailable".into()));
        }
        let Some((data, info)) = staged_parts::get(&id) else {
            return Ok(Err(format!("the request staged no file part {id}")));
        };
        self.txn.put_owned(&keys::blob(&id), data);
        Ok(Ok(info))
    }

    /// A blob can be megabytes, copied into the instance and out again with the answer:
    /// a call on a tokio worker stops here (the caller re-runs it on a blocking thread),
    /// so a download never holds up other connections.
    fn get(&mut self, id: String) -> wasmtime::Result<Option<Vec<u8>>> {
        if self.on_worker {
            self.needs_blocking_thread = true;
            return Err(wasmtime::Error::msg(MOVE_OFF_WORKER));
        }
        if let Some((data, _)) = staged_parts::get(&id) {
            return Ok(Some(data.to_vec()));
        }
        self.txn
            .get_blob(&keys::blob(&id))
            .map_err(wasmtime::Error::from_anyhow)
    }

    fn delete(&mut self, id: String) -> wasmtime::Result<()> {
        self.may_write()?;
        self.txn.delete(&keys::blob(&id));
        Ok(())
    }
}

impl CallState {
    /// Writes `data` as a new blob in this call's transaction.
    pub fn put_blob(&mut self, data: Vec<u8>) -> BlobInfo {
        let id = random_id();
        let info = BlobInfo {
            size: data.len() as u64,
            sha256: sha256_hex(&data),
            id: id.clone(),
        };
        self.txn.put_owned(&keys::blob(&id), data);
        info
    }
}
