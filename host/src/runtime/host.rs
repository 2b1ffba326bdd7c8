//! The `host` interface: settings, passwords, eID, client metadata documents, the
//! check of a PDF, and the engine's error report.

use super::{CallState, offload};
use crate::bindings::{Settings, host, types};

/// Longest a Client ID Metadata Document fetch may take.
const CLIENT_METADATA_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest Client ID Metadata Document accepted.
const CLIENT_METADATA_MAX_BYTES: usize = 64 * 1024;

impl host::Host for CallState {
    fn get_settings(&mut self) -> wasmtime::Result<Settings> {
        Ok(self.shared.settings.clone())
    }

    fn hash_password(&mut self, password: String) -> wasmtime::Result<String> {
        Ok(offload(|| self.shared.passwords.hash(&password)))
    }

    fn verify_password(&mut self, password: String, hash: String) -> wasmtime::Result<bool> {
        let key = (password, hash);
        if let Some(ok) = self.verified.get(&key) {
            return Ok(*ok);
        }
        let ok = offload(|| self.shared.passwords.verify(&key.0, &key.1));
        self.verified.insert(key, ok);
        Ok(ok)
    }

    fn log_error(&mut self, message: String) -> wasmtime::Result<()> {
        self.engine_error = Some(message);
        Ok(())
    }

    fn eid_start(
        &mut self,
        session: String,
        return_url: String,
    ) -> wasmtime::Result<Result<String, String>> {
        self.may_write()?;
        Ok(match &self.shared.eid {
            Some(p) => p.start(&session, &return_url),
            None => Err("no eID provider is configured".into()),
        })
    }

    fn eid_finish(
        &mut self,
        session: String,
        query: String,
    ) -> wasmtime::Result<Result<types::EidIdentity, String>> {
        self.may_write()?;
        Ok(match &self.shared.eid {
            Some(p) => p.finish(&session, &query).map(|i| types::EidIdentity {
                name: i.name,
                subject: i.subject,
            }),
            None => Err("no eID provider is configured".into()),
        })
    }

    fn fetch_client_metadata(&mut self, url: String) -> wasmtime::Result<Result<String, String>> {
        self.may_write()?;
        let Some(outbound) = self.shared.outbound.clone() else {
            return Ok(Err(
                "this server fetches no client metadata documents".into()
            ));
        };
        let fetch = async move {
            match tokio::time::timeout(
                CLIENT_METADATA_TIMEOUT,
                outbound.download(&url, CLIENT_METADATA_MAX_BYTES),
            )
            .await
            {
                Ok(Ok(bytes)) => {
                    String::from_utf8(bytes).map_err(|_| "the document is not UTF-8".to_string())
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!(
                    "no answer within {} s",
                    CLIENT_METADATA_TIMEOUT.as_secs()
                )),
            }
        };
        // On a runtime worker, wait for the fetch off it; without a runtime (tests of
        // the host alone), run one for the fetch.
        Ok(offload(|| match tokio::runtime::Handle::try_current() {
            Ok(h) => h.block_on(fetch),
            Err(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(fetch)),
        }))
    }

    fn verify_pdf(&mut self, data: Vec<u8>) -> wasmtime::Result<types::PdfCheck> {
        let own = self.shared.seal_certificate_sha256.clone();
        Ok(offload(|| crate::evidence::check(&data, &own)))
    }
}
