//! Models by name: sentence embedders and cross-encoder rerankers exported to ONNX on the
//! Hugging Face hub, each with what it takes to use it well (pooling, normalisation, the
//! prefixes it was trained with, its window and width) and its files pinned to a revision.
//!
//! A name is looked up without regard to case, with or without its owner
//! (`bge-small-en-v1.5` or `BAAI/bge-small-en-v1.5`). The composition fetches an entry's
//! files on first use (`memory-hub`) into a directory of its own
//! (`~/.cache/memory-models/<name>`) and loads them with [`crate::OnnxEmbedder::from_catalogue`]
//! or [`crate::OnnxReranker::from_catalogue`].
//!
//! ```
//! use memory_onnx::catalogue::{self, Pooling};
//! let bge = catalogue::embedder("BAAI/bge-small-en-v1.5").unwrap();
//! assert_eq!((bge.dimensions, bge.pooling), (384, Pooling::Cls));
//! assert!(catalogue::reranker("ms-marco-minilm-l-6-v2").is_some());
//! ```

use crate::hub::{HUB_FILES, HUB_MODEL_FILE, HUB_REPO, HUB_REVISION};

/// How a text's vector is made from its tokens' last hidden states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over every token (special tokens and prefix included).
    Mean,
    /// The first token's state (`[CLS]` or `<s>`).
    Cls,
}

/// A file of a model: its path in the repository, its size in bytes (where known) and its
/// SHA-256, each checked when it is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// The path in the repository and in the model's directory.
    pub path: &'static str,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
    /// Its SHA-256, lower-case hex.
    pub sha256: &'static str,
}

impl PinnedFile {
    /// A file pinned by `sha256` (and `size`, when known).
    pub const fn new(path: &'static str, size: Option<u64>, sha256: &'static str) -> Self {
        Self { path, size, sha256 }
    }
}

/// A sentence embedder in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderModel {
    /// The name it is asked for by (`[memory] embedder = "..."`).
    pub name: &'static str,
    /// The hub repository its files come from.
    pub repo: &'static str,
    /// The commit of `repo` the files are pinned to.
    pub revision: &'static str,
    /// The ONNX graph among `files`.
    pub graph: &'static str,
    /// Every file read: the graph and `tokenizer.json`.
    pub files: &'static [PinnedFile],
    /// The width of its vectors.
    pub dimensions: usize,
    /// How token states become one vector.
    pub pooling: Pooling,
    /// Whether vectors are scaled to unit length.
    pub normalize: bool,
    /// Put before every search query (the model was trained with it).
    pub query_prefix: &'static str,
    /// Put before every stored text.
    pub document_prefix: &'static str,
    /// Tokens per pass, special tokens included; longer texts are split into windows.
    pub max_tokens: usize,
    /// What it reads well.
    pub languages: &'static str,
}

/// A cross-encoder reranker in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerankerModel {
    /// The name it is asked for by (`[memory] reranker = "..."`).
    pub name: &'static str,
    /// The hub repository its files come from.
    pub repo: &'static str,
    /// The commit of `repo` the files are pinned to.
    pub revision: &'static str,
    /// The ONNX graph among `files`.
    pub graph: &'static str,
    /// Every file read: the graph and `tokenizer.json`.
    pub files: &'static [PinnedFile],
    /// Tokens per (query, document) pass; the longer of the two is cut to fit.
    pub max_tokens: usize,
    /// What it reads well.
    pub languages: &'static str,
}

impl EmbedderModel {
    /// The model id its vectors are recorded with: the repository, the revision's first 12
    /// characters and the graph.
    pub fn model_id(&self) -> String {
        model_id(self.repo, self.revision, self.graph)
    }

    /// Total bytes of its files (those of known size).
    pub fn bytes(&self) -> u64 {
        bytes(self.files)
    }
}

impl RerankerModel {
    /// The model id it reports: the repository, the revision's first 12 characters and the
    /// graph.
    pub fn model_id(&self) -> String {
        model_id(self.repo, self.revision, self.graph)
    }

    /// Total bytes of its files (those of known size).
    pub fn bytes(&self) -> u64 {
        bytes(self.files)
    }
}

fn model_id(repo: &str, revision: &str, graph: &str) -> String {
    let short = revision.get(..12).unwrap_or(revision);
    format!("{repo}@{short}:{graph}")
}

fn bytes(files: &[PinnedFile]) -> u64 {
    files.iter().filter_map(|file| file.size).sum()
}

/// The name of the catalogue's entry for the int8 all-MiniLM-L6-v2 the default embedder
/// (`local-int8`) runs: the same files, in the same directory.
pub const MINILM: &str = "all-MiniLM-L6-v2";

/// The query instruction of BAAI's English v1.5 models (for short queries against passages).
const BGE_QUERY: &str = "Represent this sentence for searching relevant passages: ";

/// The tokenizer BAAI's, nomic's, e5's English and the MS MARCO cross-encoder's exports share
/// (BERT's uncased WordPiece).
const BERT_UNCASED_TOKENIZER: PinnedFile = PinnedFile::new(
    "tokenizer.json",
    Some(711_396),
    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
);

/// Every embedder by name. Sizes and checksums were taken from other projects' pins of the
/// same files at the same commits (no hub was reachable where this was written); a fetch
/// checks each, so a wrong pin is a clear error, never a wrong model.
pub const EMBEDDERS: &[EmbedderModel] = &[
    EmbedderModel {
        name: MINILM,
        repo: HUB_REPO,
        revision: HUB_REVISION,
        graph: HUB_MODEL_FILE,
        files: &HUB_FILES,
        dimensions: 384,
        pooling: Pooling::Mean,
        normalize: true,
        query_prefix: "",
        document_prefix: "",
        max_tokens: 256,
        languages: "English",
    },
    EmbedderModel {
        name: "bge-small-en-v1.5",
        repo: "Xenova/bge-small-en-v1.5",
        revision: "ea104dacec62c0de699686887e3f920caeb4f3e3",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(133_093_490),
                "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
            ),
            BERT_UNCASED_TOKENIZER,
        ],
        dimensions: 384,
        pooling: Pooling::Cls,
        normalize: true,
        query_prefix: BGE_QUERY,
        document_prefix: "",
        max_tokens: 512,
        languages: "English",
    },
    EmbedderModel {
        name: "bge-base-en-v1.5",
        repo: "Xenova/bge-base-en-v1.5",
        revision: "4d6cd88e18e51a5e020c2c305726d76ada9c03cf",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(435_811_539),
                "9bc579acdba21c253c62a9bf866891355a63ffa3442b52c8a37d75b2ccb91848",
            ),
            BERT_UNCASED_TOKENIZER,
        ],
        dimensions: 768,
        pooling: Pooling::Cls,
        normalize: true,
        query_prefix: BGE_QUERY,
        document_prefix: "",
        max_tokens: 512,
        languages: "English",
    },
    EmbedderModel {
        name: "gte-small",
        repo: "thenlper/gte-small",
        revision: "17e1f347d17fe144873b1201da91788898c639cd",
        graph: "onnx/model.onnx",
        files: &[
            // Its size was not found beside its checksum: the checksum alone is checked.
            PinnedFile::new(
                "onnx/model.onnx",
                None,
                "0b01312b59bec0a2558a626f2937be4cbe4bb16d1511560153f598cec488f1f8",
            ),
            PinnedFile::new(
                "tokenizer.json",
                Some(711_661),
                "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0",
            ),
        ],
        dimensions: 384,
        pooling: Pooling::Mean,
        normalize: true,
        query_prefix: "",
        document_prefix: "",
        max_tokens: 512,
        languages: "English",
    },
    EmbedderModel {
        name: "e5-small-v2",
        repo: "intfloat/e5-small-v2",
        revision: "ffb93f3bd4047442299a41ebb6fa998a38507c52",
        graph: "model.onnx",
        files: &[
            // Its size was not found beside its checksum: the checksum alone is checked.
            PinnedFile::new(
                "model.onnx",
                None,
                "4b8205be2a3c5fc53c6534d76a2012064f7309c162b806f2889c6ec8ec4fdcba",
            ),
            BERT_UNCASED_TOKENIZER,
        ],
        dimensions: 384,
        pooling: Pooling::Mean,
        normalize: true,
        query_prefix: "query: ",
        document_prefix: "passage: ",
        max_tokens: 512,
        languages: "English",
    },
    EmbedderModel {
        name: "nomic-embed-text-v1.5",
        repo: "nomic-ai/nomic-embed-text-v1.5",
        revision: "e9b6763023c676ca8431644204f50c2b100d9aab",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(547_310_275),
                "147d5aa88c2101237358e17796cf3a227cead1ec304ec34b465bb08e9d952965",
            ),
            BERT_UNCASED_TOKENIZER,
        ],
        dimensions: 768,
        pooling: Pooling::Mean,
        normalize: true,
        query_prefix: "search_query: ",
        document_prefix: "search_document: ",
        // The model reads 8,192 tokens; windows of 512 keep a pass's cost bounded (its
        // attention grows with the square of the window).
        max_tokens: 512,
        languages: "English",
    },
    EmbedderModel {
        name: "multilingual-e5-small",
        repo: "intfloat/multilingual-e5-small",
        revision: "614241f622f53c4eeff9890bdc4f31cfecc418b3",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(470_268_510),
                "ca456c06b3a9505ddfd9131408916dd79290368331e7d76bb621f1cba6bc8665",
            ),
            PinnedFile::new(
                "tokenizer.json",
                Some(17_082_730),
                "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
            ),
        ],
        dimensions: 384,
        pooling: Pooling::Mean,
        normalize: true,
        query_prefix: "query: ",
        document_prefix: "passage: ",
        max_tokens: 512,
        languages: "about 100 languages",
    },
];

/// Every reranker by name.
pub const RERANKERS: &[RerankerModel] = &[
    RerankerModel {
        name: "ms-marco-MiniLM-L-6-v2",
        repo: "cross-encoder/ms-marco-MiniLM-L6-v2",
        revision: "c5ee24cb16019beea0893ab7796b1df96625c6b8",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(91_011_230),
                "5d3e70fd0c9ff14b9b5169a51e957b7a9c74897afd0a35ce4bd318150c1d4d4a",
            ),
            BERT_UNCASED_TOKENIZER,
        ],
        max_tokens: 512,
        languages: "English",
    },
    RerankerModel {
        name: "bge-reranker-base",
        repo: "BAAI/bge-reranker-base",
        revision: "580465186bcc87f862a9b2f9003d720af2377980",
        graph: "onnx/model.onnx",
        files: &[
            PinnedFile::new(
                "onnx/model.onnx",
                Some(1_112_459_588),
                "15b9a8c3da82eddf263df571281166e00e9308fe19d077084b642ebfcaf06d2b",
            ),
            PinnedFile::new(
                "tokenizer.json",
                Some(17_098_107),
                "9eb652ac4e40cc093272bbbe0f55d521cf67570060227109b5cdc20945a4489e",
            ),
        ],
        max_tokens: 512,
        languages: "English and Chinese",
    },
];

fn matches(name: &str, repo: &str, asked: &str) -> bool {
    let asked = asked.trim();
    let bare = asked.rsplit('/').next().unwrap_or(asked);
    name.eq_ignore_ascii_case(bare) || repo.eq_ignore_ascii_case(asked)
}

/// The embedder called `name` (any case, with or without its owner).
pub fn embedder(name: &str) -> Option<&'static EmbedderModel> {
    EMBEDDERS.iter().find(|m| matches(m.name, m.repo, name))
}

/// The reranker called `name` (any case, with or without its owner).
pub fn reranker(name: &str) -> Option<&'static RerankerModel> {
    RERANKERS.iter().find(|m| matches(m.name, m.repo, name))
}
