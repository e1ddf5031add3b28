//! An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Azure's compatible route, vLLM,
//! Ollama, LiteLLM...). Inputs go in batches of at most `batch` texts; 429 and 5xx answers,
//! timeouts and broken connections are retried with exponential back-off and jitter (a 429's
//! `Retry-After` is honoured, up to a limit); each tenant has at most `tenant_concurrency`
//! requests in flight, so one tenant's backfill cannot take the whole provider; the tokens the
//! provider counts come back as [`Usage`] for the tenant's counters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::{EmbedError, EmbedFuture, Embedded, Embedder, Usage, normalize};

/// How to reach the provider.
#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// The API's base, ending before `/embeddings` (e.g. `https://api.openai.com/v1`).
    pub base_url: String,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
    pub model: String,
    /// The vector length the provider returns (sent as `dimensions` when `send_dimensions`).
    pub dims: usize,
    pub send_dimensions: bool,
    /// Texts per request.
    pub batch: usize,
    /// Requests one tenant may have in flight.
    pub tenant_concurrency: usize,
    /// Attempts per batch, the first included.
    pub max_attempts: u32,
    /// One request's time limit.
    pub timeout: Duration,
    /// The first retry's delay; each later one doubles it, up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
}

pub struct OpenAi {
    settings: OpenAiSettings,
    /// The id its vectors carry: the model and the dimension (`text-embedding-3-small@512`),
    /// since one model can answer in several dimensions and their vectors do not mix.
    id: String,
    client: reqwest::Client,
    tenants: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct AnswerUsage {
    #[serde(default)]
    total_tokens: u64,
}

/// A failed attempt: whether another may succeed, and what to say.
enum Attempt {
    Retry { message: String, after: Option<Duration> },
    Fail(EmbedError),
}

impl OpenAi {
    pub fn new(settings: OpenAiSettings) -> Result<OpenAi, EmbedError> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| EmbedError::Model(format!("HTTP client: {e}")))?;
        let id = model_id(&settings.model, settings.dims);
        Ok(OpenAi { settings, client, id, tenants: Mutex::default() })
    }

    fn permits(&self, tenant: Uuid) -> Arc<Semaphore> {
        let mut tenants = self.tenants.lock().expect("tenant limits");
        // Only the tenants embedding now need theirs: past a thousand, the idle ones go.
        if tenants.len() >= 1024 {
            tenants.retain(|_, permits| Arc::strong_count(permits) > 1);
        }
        tenants
            .entry(tenant)
            .or_insert_with(|| Arc::new(Semaphore::new(self.settings.tenant_concurrency.max(1))))
            .clone()
    }

    async fn batch(&self, tenant: Uuid, texts: &[String]) -> Result<Embedded, EmbedError> {
        let permits = self.permits(tenant);
        let _permit = permits.acquire().await.map_err(|_| EmbedError::Run("the tenant's limit closed".into()))?;
        let mut body = serde_json::json!({
            "model": self.settings.model,
            "input": texts,
            "encoding_format": "float",
        });
        if self.settings.send_dimensions {
            body["dimensions"] = self.settings.dims.into();
        }
        let url = format!("{}/embeddings", self.settings.base_url.trim_end_matches('/'));
        let mut delay = self.settings.backoff;
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.attempt(&url, &body, texts.len()).await {
                Ok(mut embedded) => {
                    embedded.usage.requests = attempts;
                    return Ok(embedded);
                }
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry { message, after }) => {
                    if attempts >= self.settings.max_attempts {
                        return Err(EmbedError::Unavailable { attempts, message });
                    }
                    let jitter = delay.mul_f64(rand::random::<f64>() * 0.25);
                    let wait = after.unwrap_or(delay + jitter).min(self.settings.max_backoff);
                    tracing::debug!(attempts, wait_ms = wait.as_millis() as u64, %message, "retrying the embedding provider");
                    tokio::time::sleep(wait).await;
                    delay = (delay * 2).min(self.settings.max_backoff);
                }
            }
        }
    }

    async fn attempt(&self, url: &str, body: &serde_json::Value, inputs: usize) -> Result<Embedded, Attempt> {
        let mut request = self.client.post(url).json(body);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| Attempt::Retry { message: e.to_string(), after: None })?;
        let status = response.status();
        if !status.is_success() {
            let after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .and_then(|s| Duration::try_from_secs_f64(s).ok());
            let text = response.text().await.unwrap_or_default();
            let message = provider_message(&text);
            return Err(if status.as_u16() == 429 || status.is_server_error() {
                Attempt::Retry { message: format!("{status}: {message}"), after }
            } else {
                Attempt::Fail(EmbedError::Refused { status: status.as_u16(), message })
            });
        }
        let answer: Answer = response
            .json()
            .await
            .map_err(|e| Attempt::Fail(EmbedError::BadAnswer(format!("not an embeddings answer: {e}"))))?;
        if answer.data.len() != inputs {
            return Err(Attempt::Fail(EmbedError::BadAnswer(format!(
                "{} embeddings for {inputs} inputs",
                answer.data.len()
            ))));
        }
        let mut vectors = vec![Vec::new(); inputs];
        for item in answer.data {
            if item.index >= inputs || !vectors[item.index].is_empty() {
                return Err(Attempt::Fail(EmbedError::BadAnswer(format!("index {} is out of place", item.index))));
            }
            if item.embedding.len() != self.settings.dims || item.embedding.iter().any(|x| !x.is_finite()) {
                return Err(Attempt::Fail(EmbedError::BadAnswer(format!(
                    "an embedding of {} numbers where the model's dimension is {}",
                    item.embedding.len(),
                    self.settings.dims
                ))));
            }
            let mut v = item.embedding;
            normalize(&mut v);
            vectors[item.index] = v;
        }
        let tokens = answer.usage.map_or(0, |u| u.total_tokens);
        Ok(Embedded { vectors, usage: Usage { requests: 1, tokens } })
    }
}

/// The id vectors of `model` at `dims` carry.
pub fn model_id(model: &str, dims: usize) -> String {
    format!("{model}@{dims}")
}

/// The provider's model name in an id [`model_id`] made.
pub fn model_name(id: &str) -> &str {
    id.rsplit_once('@').map_or(id, |(name, _)| name)
}

/// The provider's own error message (OpenAI's `{"error": {"message": ...}}`), else the start
/// of its answer.
fn provider_message(text: &str) -> String {
    let parsed: Option<String> = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_string));
    let message = parsed.unwrap_or_else(|| text.to_string());
    message.chars().take(300).collect()
}

impl Embedder for OpenAi {
    fn model(&self) -> &str {
        &self.id
    }

    fn dims(&self) -> usize {
        self.settings.dims
    }

    fn embed<'a>(&'a self, tenant: Uuid, texts: &'a [String]) -> EmbedFuture<'a> {
        Box::pin(async move {
            let mut out = Embedded::default();
            for batch in texts.chunks(self.settings.batch.max(1)) {
                let got = self.batch(tenant, batch).await?;
                out.vectors.extend(got.vectors);
                out.usage.requests += got.usage.requests;
                out.usage.tokens += got.usage.tokens;
            }
            Ok(out)
        })
    }
}
