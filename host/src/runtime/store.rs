//! The `store` interface: the engine's keys, under `d/`, in the call's transaction.

use super::CallState;
use crate::bindings::store;
use crate::host_tables::keys;

fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(keys::DATA.len() + key.len());
    k.extend_from_slice(keys::DATA);
    k.extend_from_slice(key);
    k
}

impl store::Host for CallState {
    fn get(&mut self, key: Vec<u8>) -> wasmtime::Result<Option<Vec<u8>>> {
        self.txn
            .get(&data_key(&key))
            .map_err(wasmtime::Error::from_anyhow)
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> wasmtime::Result<()> {
        self.may_write()?;
        self.puts += 1;
        if self.faults.trap_on_put == Some(self.puts) {
            wasmtime::bail!("test fault: trap on store.put #{}", self.puts);
        }
        self.txn.put(&data_key(&key), &value);
        Ok(())
    }

    fn delete(&mut self, key: Vec<u8>) -> wasmtime::Result<()> {
        self.may_write()?;
        self.txn.delete(&data_key(&key));
        Ok(())
    }

    fn scan(
        &mut self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        reverse: bool,
    ) -> wasmtime::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let entries = self
            .txn
            .scan(&data_key(&start), &data_key(&end), limit as usize, reverse)
            .map_err(wasmtime::Error::from_anyhow)?;
        Ok(entries
            .into_iter()
            .map(|(k, v)| (k[keys::DATA.len()..].to_vec(), v))
            .collect())
    }
}
