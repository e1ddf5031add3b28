//! Text to vectors. One [`Embedder`] trait with two implementations: [`local::Local`], a
//! sentence-embedding model run in-process with ONNX Runtime (loaded from a shared library at
//! start, nothing downloaded), and [`http::OpenAi`], any OpenAI-compatible `/v1/embeddings`
//! endpoint (batched, retried with back-off, limited per tenant, its usage counted).
//!
//! Every vector an embedder returns is unit length, so cosine similarity is a dot product and
//! pgvector's cosine distance orders the same way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use uuid::Uuid;

pub mod http;
pub mod local;
pub mod wordpiece;

/// What embedding can fail with.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model's files could not be loaded or are not what they should be.
    #[error("embedding model: {0}")]
    Model(String),
    /// The model ran and failed.
    #[error("embedding model run: {0}")]
    Run(String),
    /// The provider answered with an error that trying again will not mend (400, 401, 404...).
    #[error("embedding provider refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    /// The provider failed or could not be reached, and went on failing through the retries.
    #[error("embedding provider unavailable after {attempts} attempts: {message}")]
    Unavailable { attempts: u32, message: String },
    /// The provider answered something that is not a set of embeddings for the inputs.
    #[error("embedding provider answered badly: {0}")]
    BadAnswer(String),
}

/// What an embedding call cost, for the tenant's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Requests made to the provider, retries included (0 for the local model).
    pub requests: u32,
    /// Tokens the provider counted (the local model counts its own).
    pub tokens: u64,
}

/// Vectors for a call's texts, in order, each of the model's dimension.
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub usage: Usage,
}

pub type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Embedded, EmbedError>> + Send + 'a>>;

/// A model that turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// The model's id, stored with every vector it made.
    fn model(&self) -> &str;
    /// The length of its vectors.
    fn dims(&self) -> usize;
    /// Vectors for `texts`, on behalf of `tenant` (whose concurrency limit and counters apply).
    fn embed<'a>(&'a self, tenant: Uuid, texts: &'a [String]) -> EmbedFuture<'a>;
}

pub type SharedEmbedder = Arc<dyn Embedder>;

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The hash a chunk's embedding input is known by, so the same text is embedded once per
/// tenant and model however many notes, copies or renames hold it.
pub fn text_hash(text: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes()).to_vec()
}

/// Makes an embedder for another model of the configured provider (a vault's older set, still
/// searched while the new one fills): the model id (as the set stores it) and its dimension.
pub type MakeEmbedder = Box<dyn Fn(&str, usize) -> Result<SharedEmbedder, EmbedError> + Send + Sync>;

/// The deployment's embedders: the configured one, and others of the same provider made on
/// demand for the models a vault still holds.
pub struct Embeddings {
    active: Option<SharedEmbedder>,
    make: Option<MakeEmbedder>,
    made: std::sync::Mutex<std::collections::HashMap<String, SharedEmbedder>>,
}

impl Embeddings {
    /// No provider: semantic search is unavailable and nothing is embedded.
    pub fn none() -> Embeddings {
        Embeddings { active: None, make: None, made: Default::default() }
    }

    pub fn new(active: SharedEmbedder, make: Option<MakeEmbedder>) -> Embeddings {
        Embeddings { active: Some(active), make, made: Default::default() }
    }

    /// The configured embedder, which new vectors come from.
    pub fn active(&self) -> Option<&SharedEmbedder> {
        self.active.as_ref()
    }

    /// An embedder for `model` (of `dims`): the configured one, or one the provider can make.
    pub fn for_model(&self, model: &str, dims: usize) -> Option<SharedEmbedder> {
        let active = self.active.as_ref()?;
        if active.model() == model && active.dims() == dims {
            return Some(active.clone());
        }
        let make = self.make.as_ref()?;
        let mut made = self.made.lock().expect("embedders");
        if let Some(e) = made.get(model).filter(|e| e.dims() == dims) {
            return Some(e.clone());
        }
        match make(model, dims) {
            Ok(e) => {
                made.insert(model.to_string(), e.clone());
                Some(e)
            }
            Err(e) => {
                tracing::warn!(model, error = %e, "cannot make an embedder for a vault's older model");
                None
            }
        }
    }
}
