//! The local model against vectors the reference pipeline (Hugging Face `tokenizers` and the
//! `onnxruntime` Python package over the same model file, mean pooling over the attention mask)
//! computed for the same texts: `tests/data/minilm-reference.json`, whose `packaged` vectors
//! are the packaged model's, before `scripts/quantize_model.py` made its products integer. Needs `scripts/models
//! install` (scripts/test runs it); the paths come from `scripts/models env`.

use otc_embed::Embedder;
use otc_embed::local::{Local, LocalEmbedder, LocalFiles, MINILM_MODEL};
use std::sync::Arc;

fn files() -> LocalFiles {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run `eval \"$(scripts/models env)\"`"))
    };
    LocalFiles {
        library: var("OTC_TEST_EMBEDDING_LIBRARY").into(),
        model: var("OTC_TEST_EMBEDDING_MODEL").into(),
        tokenizer: var("OTC_TEST_EMBEDDING_TOKENIZER").into(),
    }
}

#[derive(serde::Deserialize)]
struct Reference {
    text: String,
    ids: Vec<i64>,
    vector: Vec<f32>,
    packaged: Vec<f32>,
}

/// Whether the CPU multiplies int8 with VNNI (the instructions the reference vectors came from).
fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vnni") || std::arch::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[tokio::test]
async fn matches_the_reference_pipeline() {
    let references: Vec<Reference> =
        serde_json::from_str(include_str!("data/minilm-reference.json")).expect("reference file");
    let local = Arc::new(Local::load(&files(), 2).expect("the local model loads"));
    let tokenizer = std::fs::read(files().tokenizer).unwrap();
    let wordpiece = otc_embed::wordpiece::WordPiece::from_json(&tokenizer).unwrap();
    for r in &references {
        assert_eq!(wordpiece.encode(&r.text, otc_embed::local::MAX_TOKENS), r.ids, "token ids of {:?}", r.text);
    }
    let embedder = LocalEmbedder(local);
    assert_eq!(embedder.dims(), 384);
    assert_eq!(embedder.model(), MINILM_MODEL);
    // One call with every text, run side by side on the two sessions: a text's vector must not
    // depend on the others, nor on which session ran it.
    let texts: Vec<String> = references.iter().map(|r| r.text.clone()).collect();
    let got = embedder.embed(uuid::Uuid::nil(), &texts).await.expect("embeds");
    assert_eq!(got.vectors.len(), references.len());
    // ONNX Runtime's integer products match the reference exactly where the CPU has VNNI; with
    // AVX2 alone its u8s8 kernel saturates 16-bit sums and the vectors drift a little (0.989 to
    // the reference on AMD EPYC machines without VNNI), still held to the packaged model below.
    let floor = if vnni() { 0.9999 } else { 0.98 };
    for (r, v) in references.iter().zip(&got.vectors) {
        let reference = cosine(&r.vector, v);
        assert!(reference > floor, "{:?}: cosine {reference} to the reference", r.text);
        // Integer products stay close to the packaged model's float ones (0.988 at worst).
        let packaged = cosine(&r.packaged, v);
        assert!(packaged > 0.98, "{:?}: cosine {packaged} to the packaged model", r.text);
        let alone = embedder.embed(uuid::Uuid::nil(), std::slice::from_ref(&r.text)).await.expect("embeds");
        assert!(cosine(&alone.vectors[0], v) > 0.99999, "{:?} alone and in a batch differ", r.text);
    }
    // Different texts are not all alike (padding is masked out of the pooling).
    let dot = cosine(&got.vectors[0], &got.vectors[2]);
    assert!(dot < 0.5, "unrelated texts scored {dot}");
}

#[test]
fn a_model_id_names_the_file_that_made_the_vectors() {
    let model = std::fs::read(files().model).expect("the model file");
    assert_eq!(otc_embed::local::model_id(&model), MINILM_MODEL);
    let other = otc_embed::local::model_id(b"another model");
    assert!(other.starts_with("onnx-") && other.len() == 21, "{other}");
    assert_ne!(other, otc_embed::local::model_id(b"a third model"));
}
