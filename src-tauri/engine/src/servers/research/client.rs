//! The arXiv API over HTTP: one request at a time and at least [`Timing::interval`] apart (arXiv's
//! terms of use: "no more than one request every three seconds … a single connection at a time"),
//! timeouts, 429 and 5xx retried with exponential backoff and jitter within a bounded budget,
//! then an error the model can read.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::atom::{self, AtomError, Feed};

/// The public arXiv API.
pub const DEFAULT_URL: &str = "https://export.arxiv.org/api/query";

/// How patient the client is. Tests shorten these (`SWITCHBOARD_RESEARCH_TIMING`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Least time between two requests.
    pub interval: Duration,
    /// One request, its body included.
    pub timeout: Duration,
    /// The first retry's wait; each next one doubles it (plus up to half of it as jitter).
    pub backoff: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    /// Everything, retries and waits included: under the host's call timeout (60 s).
    pub budget: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            interval: Duration::from_secs(3),
            timeout: Duration::from_secs(15),
            backoff: Duration::from_secs(3),
            retries: 3,
            budget: Duration::from_secs(50),
        }
    }
}

impl Timing {
    /// `interval_ms,timeout_ms,backoff_ms` (each optional), over the defaults.
    pub fn parse(spec: &str) -> Timing {
        let mut t = Timing::default();
        let ms: Vec<Option<u64>> = spec.split(',').map(|s| s.trim().parse().ok()).collect();
        let get = |i: usize| ms.get(i).copied().flatten().map(Duration::from_millis);
        t.interval = get(0).unwrap_or(t.interval);
        t.timeout = get(1).unwrap_or(t.timeout);
        t.backoff = get(2).unwrap_or(t.backoff);
        t
    }
}

/// Why a query gave no feed: a sentence for the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    /// arXiv answered that the query is wrong: retrying cannot help.
    #[error("{0}")]
    Refused(String),
    /// arXiv could not be reached or kept failing; said after the retries.
    #[error("{0}")]
    Unavailable(String),
}

/// One failed attempt: what happened and whether another may succeed.
enum Attempt {
    Retry {
        why: Failure,
        after: Option<Duration>,
    },
    Stop(FetchError),
}

#[derive(Clone, Copy, PartialEq)]
enum Failure {
    RateLimited,
    Status(u16),
    Timeout,
    Connect,
    EmptyPage,
}

pub struct Client {
    http: reqwest::Client,
    base: String,
    timing: Timing,
    /// When the last request started; held across a request so there is one at a time.
    last: Mutex<Option<Instant>>,
}

impl Client {
    pub fn new(base: impl Into<String>, timing: Timing) -> Client {
        let http = reqwest::Client::builder()
            .user_agent(concat!(
                "Switchboard/",
                env!("CARGO_PKG_VERSION"),
                " (research MCP server)"
            ))
            .pool_max_idle_per_host(1)
            .connect_timeout(timing.timeout)
            .build()
            .expect("an HTTP client");
        Client {
            http,
            base: base.into(),
            timing,
            last: Mutex::new(None),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// The query URL for these parameters.
    pub fn url(&self, params: &[(&str, String)]) -> Result<reqwest::Url, FetchError> {
        reqwest::Url::parse_with_params(&self.base, params).map_err(|e| {
            FetchError::Refused(format!(
                "The arXiv URL \"{}\" is not usable: {e}",
                self.base
            ))
        })
    }

    /// Fetches and reads a query, retrying what may pass.
    pub async fn query(&self, params: &[(&str, String)]) -> Result<Feed, FetchError> {
        let url = self.url(params)?;
        let began = Instant::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let remaining = self.timing.budget.saturating_sub(began.elapsed());
            let (why, after) = match self.attempt(&url, remaining).await {
                Ok(feed) => return Ok(feed),
                Err(Attempt::Stop(e)) => return Err(e),
                Err(Attempt::Retry { why, after }) => (why, after),
            };
            let backoff = self.timing.backoff * 2u32.saturating_pow(attempts - 1);
            let wait = after.unwrap_or(backoff).max(backoff) + jitter(backoff / 2);
            let spent = began.elapsed();
            if attempts > self.timing.retries || spent + wait >= self.timing.budget {
                return Err(FetchError::Unavailable(give_up(why, attempts, spent)));
            }
            tracing::warn!(attempts, ?wait, "arXiv: retrying");
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(&self, url: &reqwest::Url, remaining: Duration) -> Result<Feed, Attempt> {
        let mut last = self.last.lock().await;
        if let Some(at) = *last {
            tokio::time::sleep_until((at + self.timing.interval).into()).await;
        }
        let timeout = self
            .timing
            .timeout
            .min(remaining)
            .max(Duration::from_millis(1));
        let sent = tokio::time::timeout(timeout, async {
            let resp = self.http.get(url.clone()).send().await?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let body = resp.text().await?;
            Ok::<_, reqwest::Error>((status, retry_after, body))
        })
        .await;
        // the interval counts from the end of this request, not its start: arXiv then never
        // sees two requests closer than it, however late this one reached it (on a busy
        // machine the test's fixture saw them 2.99 s apart)
        *last = Some(Instant::now());
        drop(last);
        let (status, retry_after, body) = match sent {
            Err(_) => return Err(retry(Failure::Timeout)),
            Ok(Err(e)) if e.is_timeout() => return Err(retry(Failure::Timeout)),
            Ok(Err(e)) if e.is_connect() => {
                tracing::warn!("arXiv: {e}");
                return Err(retry(Failure::Connect));
            }
            Ok(Err(e)) => {
                return Err(Attempt::Stop(FetchError::Unavailable(format!(
                    "Could not read arXiv's answer: {e}."
                ))))
            }
            Ok(Ok(r)) => r,
        };
        let code = status.as_u16();
        if code == 429 {
            return Err(Attempt::Retry {
                why: Failure::RateLimited,
                after: retry_after,
            });
        }
        if status.is_server_error() {
            return Err(Attempt::Retry {
                why: Failure::Status(code),
                after: retry_after,
            });
        }
        match atom::parse(&body) {
            Err(AtomError::Api(msg)) => Err(Attempt::Stop(FetchError::Refused(format!(
                "arXiv refused the query: {msg}."
            )))),
            _ if !status.is_success() => Err(Attempt::Stop(FetchError::Refused(format!(
                "arXiv answered HTTP {code}: {}",
                super::atom::collapse(&body.chars().take(200).collect::<String>())
            )))),
            Err(e) => Err(Attempt::Stop(FetchError::Unavailable(format!("{e}.")))),
            // arXiv sometimes answers an empty page where there are results (arxiv.py's
            // UnexpectedEmptyPageError): worth another try
            Ok(f) if f.papers.is_empty() && f.total.unwrap_or(0) > f.start.unwrap_or(0) => {
                Err(retry(Failure::EmptyPage))
            }
            Ok(f) => Ok(f),
        }
    }
}

fn retry(why: Failure) -> Attempt {
    Attempt::Retry { why, after: None }
}

fn give_up(why: Failure, attempts: u32, spent: Duration) -> String {
    let tried = format!("{attempts} attempts over {} s", spent.as_secs());
    match why {
        Failure::RateLimited => format!(
            "arXiv is rate-limiting requests (HTTP 429; {tried}). Try again in a minute; do not retry at once."
        ),
        Failure::Status(code) => format!(
            "arXiv is unavailable (HTTP {code}; {tried}). It may be overloaded: try again later."
        ),
        Failure::Timeout => format!(
            "arXiv did not answer in time ({tried}). It may be overloaded: try again later."
        ),
        Failure::Connect => format!(
            "arXiv could not be reached ({tried}): no connection to the arXiv API. The computer may be offline."
        ),
        Failure::EmptyPage => format!(
            "arXiv kept answering an empty page where it counts results ({tried}). Try again later."
        ),
    }
}

/// Up to `max`, from the standard library's per-process random hash keys and the clock.
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    if max.is_zero() {
        return max;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    Duration::from_nanos(h.finish() % (max.as_nanos() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_overrides_and_jitter_bounds() {
        let t = Timing::parse("10,200,5");
        assert_eq!(t.interval, Duration::from_millis(10));
        assert_eq!(t.timeout, Duration::from_millis(200));
        assert_eq!(t.backoff, Duration::from_millis(5));
        assert_eq!(t.retries, 3);
        assert_eq!(Timing::parse("x"), Timing::default());
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(7)) < Duration::from_millis(7));
        }
        assert!(jitter(Duration::ZERO).is_zero());
    }

    #[test]
    fn giving_up_says_why_and_what_to_do() {
        let s = give_up(Failure::RateLimited, 4, Duration::from_secs(21));
        assert!(
            s.contains("rate-limiting") && s.contains("4 attempts over 21 s"),
            "{s}"
        );
        assert!(give_up(Failure::Status(503), 2, Duration::ZERO).contains("HTTP 503"));
        assert!(give_up(Failure::Timeout, 2, Duration::ZERO).contains("did not answer in time"));
    }
}
