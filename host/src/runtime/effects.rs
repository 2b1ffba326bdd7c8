//! The `effects` interface: events with their deliveries, jobs, mail and text messages,
//! each a row of the host's tables written in the call's transaction.

use super::CallState;
use crate::bindings::effects;
use crate::host_tables::{jobs, mail, webhooks};

impl effects::Host for CallState {
    fn emit_event(
        &mut self,
        event: effects::Event,
        deliveries: Vec<effects::Delivery>,
    ) -> wasmtime::Result<()> {
        self.may_write()?;
        if webhooks::record_event(&mut self.txn, event, deliveries)
            .map_err(wasmtime::Error::from_anyhow)?
        {
            self.queued_deliveries = true;
        }
        Ok(())
    }

    fn cancel_deliveries(&mut self, subscription_id: String) -> wasmtime::Result<()> {
        self.may_write()?;
        webhooks::cancel(&mut self.txn, &subscription_id);
        Ok(())
    }

    fn pending_deliveries(
        &mut self,
        subscription_id: String,
        target_url: String,
        limit: u32,
    ) -> wasmtime::Result<Vec<effects::PendingDelivery>> {
        webhooks::pending(&mut self.txn, &subscription_id, &target_url, limit)
            .map_err(wasmtime::Error::from_anyhow)
    }

    fn schedule_job(&mut self, job: effects::JobSpec) -> wasmtime::Result<String> {
        self.may_write()?;
        let id = jobs::queue(&mut self.txn, job).map_err(wasmtime::Error::from_anyhow)?;
        self.scheduled_jobs = true;
        Ok(id)
    }

    fn send_mail(&mut self, mail: effects::Mail) -> wasmtime::Result<()> {
        self.may_write()?;
        mail::queue_mail(&mut self.txn, mail).map_err(wasmtime::Error::from_anyhow)?;
        self.queued_mail = true;
        Ok(())
    }

    fn send_sms(&mut self, sms: effects::Sms) -> wasmtime::Result<()> {
        self.may_write()?;
        mail::queue_sms(&mut self.txn, sms).map_err(wasmtime::Error::from_anyhow)?;
        self.queued_sms = true;
        Ok(())
    }
}
