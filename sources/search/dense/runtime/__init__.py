"""The bundled model on onnxruntime: the session and its inference (`minilm`), the graph as it is
run (`graph`), and the memory a session's build frees given back (`heap`)."""
