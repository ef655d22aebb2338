//! The model check (`chat::check`) on a provider's model, its report remembered in the store
//! per model (not in the settings), and the tool-call format detected for a model.

use tokio_util::sync::CancellationToken;

use super::llm_client;
use super::Runtime;
use crate::chat::check::{self, CheckEvent, CheckReport};
use crate::chat::families::ToolFormat;
use crate::chat::markup;
use crate::llm::LlmError;
use crate::settings::ProviderConfig;
use crate::store::StoreError;

impl Runtime {
    /// Checks how `model` of provider `p` uses tools, and remembers the report. Progress goes to
    /// `on_event`; `cancel` stops it (the probes that ran are reported, and not remembered).
    pub async fn check_model(
        &self,
        p: &ProviderConfig,
        model: &str,
        on_event: &mut (dyn FnMut(CheckEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<CheckReport, StoreError> {
        let llm = llm_client(p, &self.secrets);
        let report = check::check_model(&*llm, model, on_event, cancel).await;
        if !report.cancelled {
            let json = serde_json::to_string(&report).unwrap_or_default();
            self.store.save_model_check(&p.url, model, &json).await?;
        }
        Ok(report)
    }

    /// The last check of `model` of provider `p`, when there was one (a report that no longer
    /// reads counts as none).
    pub async fn last_model_check(
        &self,
        p: &ProviderConfig,
        model: &str,
    ) -> Result<Option<CheckReport>, StoreError> {
        let kept = self.store.model_check(&p.url, model).await?;
        Ok(kept.and_then(|k| serde_json::from_str(&k).ok()))
    }

    /// The tool-call format detected for `model` of provider `p` from what its server says of
    /// it (its chat template, its name, its family); `None` when none fits.
    pub async fn tool_format(
        &self,
        p: &ProviderConfig,
        model: &str,
    ) -> Result<Option<ToolFormat>, LlmError> {
        let details = llm_client(p, &self.secrets).model_details(model).await?;
        Ok(markup::format_of_model(model, &details))
    }
}
