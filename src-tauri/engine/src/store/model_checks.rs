//! The last model check of each model (`chat::check`), remembered: its report as JSON (the
//! store does not read it), by the provider's URL and the model's name.

use rusqlite::{params, OptionalExtension};

use super::{now_ms, Store, StoreError};

impl Store {
    /// Keeps `report` as `model`'s last check on the provider at `provider` (replacing the one
    /// before).
    pub async fn save_model_check(
        &self,
        provider: &str,
        model: &str,
        report: &str,
    ) -> Result<(), StoreError> {
        let (provider, model, report) =
            (provider.to_string(), model.to_string(), report.to_string());
        self.call(move |c| {
            c.execute(
                "INSERT INTO model_checks (provider, model, report, checked_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (provider, model) DO UPDATE SET report = ?3, checked_at = ?4",
                params![provider, model, report, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    /// `model`'s last check on the provider at `provider`, as kept.
    pub async fn model_check(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<Option<String>, StoreError> {
        let (provider, model) = (provider.to_string(), model.to_string());
        self.call(move |c| {
            Ok(c.query_row(
                "SELECT report FROM model_checks WHERE provider = ?1 AND model = ?2",
                params![provider, model],
                |r| r.get(0),
            )
            .optional()?)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_check_of_each_model_is_kept() {
        let s = Store::open_in_memory().await.unwrap();
        assert_eq!(s.model_check("http://a", "m").await.unwrap(), None);
        s.save_model_check("http://a", "m", "{\"n\": 1}")
            .await
            .unwrap();
        s.save_model_check("http://a", "m", "{\"n\": 2}")
            .await
            .unwrap();
        s.save_model_check("http://b", "m", "{\"n\": 3}")
            .await
            .unwrap();
        assert_eq!(
            s.model_check("http://a", "m").await.unwrap().as_deref(),
            Some("{\"n\": 2}")
        );
        assert_eq!(
            s.model_check("http://b", "m").await.unwrap().as_deref(),
            Some("{\"n\": 3}")
        );
    }
}
