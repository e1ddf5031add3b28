-- Embeddings: a vector per chunk and model, made by the workers off the request path.
--
-- chunks keeps its (empty, untyped) embedding column from the first index migration; vectors
-- live apart, keyed by model, so a vault can hold two models' sets while a new one fills and
-- search keeps using the complete one.

ALTER TABLE chunks DROP COLUMN embedding;

-- Each chunk's vector for a model. Rows go with their chunk (the indexer deletes a note's
-- vectors with its chunks) and are written only while the note is still the one that was
-- embedded (checked under the vault's index lock).
CREATE TABLE chunk_vectors (
    tenant_id  uuid NOT NULL,
    vault_id   uuid NOT NULL,
    model      text NOT NULL,
    path       text COLLATE "C" NOT NULL,
    ord        int NOT NULL,
    dims       int NOT NULL CHECK (dims BETWEEN 1 AND 16000),
    embedding  vector NOT NULL CHECK (vector_dims(embedding) = dims),
    PRIMARY KEY (tenant_id, vault_id, model, path, ord)
);

-- Approximate nearest neighbours need a typed column, so there is one HNSW index per common
-- dimension, each over the cast and only for its rows (the query repeats the cast and the
-- dimension to use it). pgvector's HNSW takes at most 2,000 dimensions; a model outside this
-- list is searched exactly (correct, slower on large vaults). The tenant, vault and model
-- filters apply during the scan (hnsw.iterative_scan), so a small vault in a large table still
-- gets its k nearest.
CREATE INDEX chunk_vectors_hnsw_384 ON chunk_vectors USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dims = 384;
CREATE INDEX chunk_vectors_hnsw_512 ON chunk_vectors USING hnsw ((embedding::vector(512)) vector_cosine_ops) WHERE dims = 512;
CREATE INDEX chunk_vectors_hnsw_768 ON chunk_vectors USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE dims = 768;
CREATE INDEX chunk_vectors_hnsw_1024 ON chunk_vectors USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE dims = 1024;
CREATE INDEX chunk_vectors_hnsw_1536 ON chunk_vectors USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE dims = 1536;

-- Vectors by the hash of the text that was embedded, per tenant and model: a chunk whose text
-- was embedded before (a renamed or copied note, an unchanged section of an edited one, a
-- note restored from the trash) costs no model call. Rows unused for a while are swept.
CREATE TABLE embedding_cache (
    tenant_id  uuid NOT NULL,
    model      text NOT NULL,
    text_hash  bytea NOT NULL CHECK (length(text_hash) = 32),
    embedding  vector NOT NULL,
    used_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, model, text_hash)
);

-- The models whose vectors a vault holds: 'filling' while the workers embed its chunks,
-- 'complete' once every chunk that existed when it started has a vector (later changes keep
-- it so). Search uses the configured model once complete, another complete set until then.
CREATE TABLE vault_embeddings (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    model         text NOT NULL,
    dims          int NOT NULL,
    state         text NOT NULL CHECK (state IN ('filling', 'complete')),
    started_at    timestamptz NOT NULL DEFAULT now(),
    completed_at  timestamptz,
    PRIMARY KEY (tenant_id, vault_id, model)
);

-- What each tenant's embedding cost, per model and day: provider requests and tokens, texts
-- embedded, and texts the cache answered.
CREATE TABLE embedding_usage (
    tenant_id  uuid NOT NULL,
    model      text NOT NULL,
    day        date NOT NULL,
    requests   bigint NOT NULL DEFAULT 0,
    tokens     bigint NOT NULL DEFAULT 0,
    embedded   bigint NOT NULL DEFAULT 0,
    cached     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, model, day)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['chunk_vectors', 'embedding_cache', 'vault_embeddings', 'embedding_usage'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END
$$;
