"""A SQLite source database's vectors: their SQL (`vectors`), the exact in-memory index
(`index`; a large source's approximate one is `dense/ann/`), and the `VectorStore` over them
(`store`)."""
