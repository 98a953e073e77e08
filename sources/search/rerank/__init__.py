"""The rerank stage: a finer model reorders the fused ranking's best candidates (`stage.py`),
with a local ONNX cross-encoder (`cross_encoder.py`) or the MCP client's own model through
sampling (`sampling.py`); `choice.py` picks one for a call."""
