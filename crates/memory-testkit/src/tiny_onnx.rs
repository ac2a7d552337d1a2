//! Tiny ONNX models built in the test, for the plumbing of local models (pooling, prefixes,
//! windows, pair encoding, truncation) without any real model's weights: the graphs are
//! lookups whose outputs a test computes by hand, written as ONNX protobuf by a small encoder
//! here, with a word-level `tokenizer.json` beside them.
//!
//! - [`embedder_graph`]: `last_hidden_state[0, t] = table[input_ids[t]]` (each token's row of
//!   a table), with `attention_mask` and `token_type_ids` read too.
//! - [`reranker_graph`]: `logits[0, 0] = Σ_t score[input_ids[t]] + type_weight · Σ_t
//!   token_type_ids[t]`.
//! - [`tokenizer_json`]: lower-cased words split on whitespace and punctuation, BERT's
//!   `[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]` templates (type 1 for `B` and its `[SEP]`).

use serde_json::json;

/// Words of the tiny vocabulary after the five special tokens (`[PAD]` 0, `[UNK]` 1, `[CLS]`
/// 2, `[SEP]` 3, `[MASK]` 4): word `i` has id `5 + i`.
pub const WORDS: [&str; 12] = [
    "query", ":", "passage", "lisbon", "rain", "maria", "lives", "in", "the", "cat", "sat", "where",
];

/// The id of `token` in the tiny vocabulary.
pub fn id(token: &str) -> u32 {
    match token {
        "[PAD]" => 0,
        "[UNK]" => 1,
        "[CLS]" => 2,
        "[SEP]" => 3,
        "[MASK]" => 4,
        word => WORDS
            .iter()
            .position(|w| *w == word)
            .map_or(1, |i| 5 + i as u32),
    }
}

/// The vocabulary's size.
pub const VOCAB: usize = 5 + WORDS.len();

/// A word-level `tokenizer.json` over [`WORDS`] with BERT's special tokens and templates.
pub fn tokenizer_json() -> String {
    let mut vocab = serde_json::Map::new();
    for token in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .into_iter()
        .chain(WORDS)
    {
        vocab.insert(token.to_owned(), json!(id(token)));
    }
    let special = |token: &str| {
        json!({"id": id(token), "content": token, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let piece =
        |token: &str, type_id: u32| json!({"SpecialToken": {"id": token, "type_id": type_id}});
    let sequence = |name: &str, type_id: u32| json!({"Sequence": {"id": name, "type_id": type_id}});
    let added: Vec<serde_json::Value> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .into_iter()
        .map(special)
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [piece("[CLS]", 0), sequence("A", 0), piece("[SEP]", 0)],
            "pair": [piece("[CLS]", 0), sequence("A", 0), piece("[SEP]", 0),
                     sequence("B", 1), piece("[SEP]", 1)],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [id("[CLS]")], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [id("[SEP]")], "tokens": ["[SEP]"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    })
    .to_string()
}

/// The tiny embedder's table: row `id` of width `dimensions`, a fixed pattern with no two
/// rows alike.
pub fn embedding_table(dimensions: usize) -> Vec<Vec<f32>> {
    (0..VOCAB)
        .map(|row| {
            (0..dimensions)
                .map(|col| ((row * 7 + col * 3) % 11) as f32 - 5.0 + row as f32 * 0.01)
                .collect()
        })
        .collect()
}

/// An embedder graph over [`embedding_table`]: inputs `input_ids`, `attention_mask` and
/// (when `token_types`) `token_type_ids`, all `int64 [1, n]`; output `last_hidden_state`
/// `float [1, n, dimensions]`, each token's row (and `mask_echo`, the mask as it came, so
/// every input is read).
pub fn embedder_graph(dimensions: usize, token_types: bool) -> Vec<u8> {
    let table: Vec<f32> = embedding_table(dimensions).concat();
    let mut nodes = vec![
        node(
            "Gather",
            &["table", "input_ids"],
            &["last_hidden_state"],
            &[int("axis", 0)],
        ),
        node("Identity", &["attention_mask"], &["mask_echo"], &[]),
    ];
    let mut inputs = vec![
        value("input_ids", INT64, &[Dim::One, Dim::Tokens]),
        value("attention_mask", INT64, &[Dim::One, Dim::Tokens]),
    ];
    let mut outputs = vec![
        value(
            "last_hidden_state",
            FLOAT,
            &[Dim::One, Dim::Tokens, Dim::Fixed(dimensions as i64)],
        ),
        value("mask_echo", INT64, &[Dim::One, Dim::Tokens]),
    ];
    if token_types {
        nodes.push(node("Identity", &["token_type_ids"], &["types_echo"], &[]));
        inputs.push(value("token_type_ids", INT64, &[Dim::One, Dim::Tokens]));
        outputs.push(value("types_echo", INT64, &[Dim::One, Dim::Tokens]));
    }
    model(
        &nodes,
        &[float_tensor(
            "table",
            &[VOCAB as i64, dimensions as i64],
            &table,
        )],
        &inputs,
        &outputs,
    )
}

/// A cross-encoder graph: `logits [1, 1] = Σ score[input_ids] + type_weight · Σ
/// token_type_ids` (`scores[id]` per token id, [`VOCAB`] of them).
pub fn reranker_graph(scores: &[f32], type_weight: f32) -> Vec<u8> {
    let nodes = vec![
        node(
            "Gather",
            &["scores", "input_ids"],
            &["token_scores"],
            &[int("axis", 0)],
        ),
        node(
            "ReduceSum",
            &["token_scores", "axis_one"],
            &["word_sum"],
            &[int("keepdims", 0)],
        ),
        node(
            "Cast",
            &["token_type_ids"],
            &["types"],
            &[int("to", FLOAT as i64)],
        ),
        node(
            "ReduceSum",
            &["types", "axis_one"],
            &["type_count"],
            &[int("keepdims", 1)],
        ),
        node("Mul", &["type_count", "type_weight"], &["type_part"], &[]),
        node("Add", &["word_sum", "type_part"], &["logits"], &[]),
        node("Identity", &["attention_mask"], &["mask_echo"], &[]),
    ];
    model(
        &nodes,
        &[
            float_tensor("scores", &[scores.len() as i64, 1], scores),
            float_tensor("type_weight", &[1], &[type_weight]),
            int_tensor("axis_one", &[1], &[1]),
        ],
        &[
            value("input_ids", INT64, &[Dim::One, Dim::Tokens]),
            value("attention_mask", INT64, &[Dim::One, Dim::Tokens]),
            value("token_type_ids", INT64, &[Dim::One, Dim::Tokens]),
        ],
        &[
            value("logits", FLOAT, &[Dim::One, Dim::Fixed(1)]),
            value("mask_echo", INT64, &[Dim::One, Dim::Tokens]),
        ],
    )
}

// ONNX's element types.
const FLOAT: i32 = 1;
const INT64: i32 = 7;

enum Dim {
    One,
    Tokens,
    Fixed(i64),
}

/// Protobuf's wire format, as much of it as ONNX's `ModelProto` needs.
struct Message(Vec<u8>);

impl Message {
    fn new() -> Self {
        Self(Vec::new())
    }

    fn varint(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn int(mut self, field: u32, value: i64) -> Self {
        self.varint(u64::from(field) << 3);
        self.varint(value as u64);
        self
    }

    fn bytes(mut self, field: u32, value: &[u8]) -> Self {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(value.len() as u64);
        self.0.extend_from_slice(value);
        self
    }

    fn text(self, field: u32, value: &str) -> Self {
        self.bytes(field, value.as_bytes())
    }

    fn message(self, field: u32, value: Message) -> Self {
        self.bytes(field, &value.0)
    }
}

fn int(name: &str, value: i64) -> Message {
    // AttributeProto: name 1, i 3, type 20 (INT = 2).
    Message::new().text(1, name).int(3, value).int(20, 2)
}

fn node(op: &str, inputs: &[&str], outputs: &[&str], attributes: &[Message]) -> Message {
    // NodeProto: input 1, output 2, name 3, op_type 4, attribute 5.
    let mut message = Message::new();
    for input in inputs {
        message = message.text(1, input);
    }
    for output in outputs {
        message = message.text(2, output);
    }
    message = message
        .text(3, &format!("{op}_{}", outputs.join("_")))
        .text(4, op);
    for attribute in attributes {
        message = message.bytes(5, &attribute.0);
    }
    message
}

fn value(name: &str, element: i32, dims: &[Dim]) -> Message {
    // ValueInfoProto { name 1, type 2: TypeProto { tensor_type 1: { elem_type 1, shape 2:
    // TensorShapeProto { dim 1: { dim_value 1 | dim_param 2 } } } } }.
    let mut shape = Message::new();
    for dim in dims {
        let dim = match dim {
            Dim::One => Message::new().int(1, 1),
            Dim::Fixed(n) => Message::new().int(1, *n),
            Dim::Tokens => Message::new().text(2, "tokens"),
        };
        shape = shape.message(1, dim);
    }
    let tensor = Message::new().int(1, i64::from(element)).message(2, shape);
    Message::new()
        .text(1, name)
        .message(2, Message::new().message(1, tensor))
}

fn float_tensor(name: &str, dims: &[i64], values: &[f32]) -> Message {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    tensor(name, dims, FLOAT, &raw)
}

fn int_tensor(name: &str, dims: &[i64], values: &[i64]) -> Message {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    tensor(name, dims, INT64, &raw)
}

fn tensor(name: &str, dims: &[i64], element: i32, raw: &[u8]) -> Message {
    // TensorProto: dims 1, data_type 2, name 8, raw_data 9.
    let mut message = Message::new();
    for dim in dims {
        message = message.int(1, *dim);
    }
    message
        .int(2, i64::from(element))
        .text(8, name)
        .bytes(9, raw)
}

fn model(
    nodes: &[Message],
    initializers: &[Message],
    inputs: &[Message],
    outputs: &[Message],
) -> Vec<u8> {
    // GraphProto: node 1, name 2, initializer 5, input 11, output 12.
    let mut graph = Message::new();
    for node in nodes {
        graph = graph.bytes(1, &node.0);
    }
    graph = graph.text(2, "tiny");
    for initializer in initializers {
        graph = graph.bytes(5, &initializer.0);
    }
    for input in inputs {
        graph = graph.bytes(11, &input.0);
    }
    for output in outputs {
        graph = graph.bytes(12, &output.0);
    }
    // ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 ({ domain 1,
    // version 2 }).
    Message::new()
        .int(1, 8)
        .text(2, "memory-testkit")
        .message(7, graph)
        .message(8, Message::new().text(1, "").int(2, 13))
        .0
}
