//! The local model against vectors the reference pipeline (Hugging Face `tokenizers` and the
//! `onnxruntime` Python package over the same model file, mean pooling over the attention mask)
//! computed for the same texts: `tests/data/minilm-reference.json`. Needs `scripts/models
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
}

#[tokio::test]
async fn matches_the_reference_pipeline() {
    let references: Vec<Reference> =
        serde_json::from_str(include_str!("data/minilm-reference.json")).expect("reference file");
    let local = Arc::new(Local::load(&files(), MINILM_MODEL, 2).expect("the local model loads"));
    let tokenizer = std::fs::read(files().tokenizer).unwrap();
    let wordpiece = otc_embed::wordpiece::WordPiece::from_json(&tokenizer).unwrap();
    for r in &references {
        assert_eq!(wordpiece.encode(&r.text, otc_embed::local::MAX_TOKENS), r.ids, "token ids of {:?}", r.text);
    }
    let embedder = LocalEmbedder(local);
    assert_eq!(embedder.dims(), 384);
    assert_eq!(embedder.model(), MINILM_MODEL);
    // One call with every text: batching and padding must not change a text's vector.
    let texts: Vec<String> = references.iter().map(|r| r.text.clone()).collect();
    let got = embedder.embed(uuid::Uuid::nil(), &texts).await.expect("embeds");
    for (r, v) in references.iter().zip(&got.vectors) {
        let cosine: f32 = r.vector.iter().zip(v).map(|(a, b)| a * b).sum();
        assert!(cosine > 0.9999, "{:?}: cosine {cosine} to the reference", r.text);
    }
    // Different texts are not all alike (padding is masked out of the pooling).
    let dot: f32 = got.vectors[0].iter().zip(&got.vectors[2]).map(|(a, b)| a * b).sum();
    assert!(dot < 0.5, "unrelated texts scored {dot}");
}
