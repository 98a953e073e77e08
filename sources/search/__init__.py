"""The shared search pipeline: parse → expand → retrieve → fuse → rerank → diversify → describe → page."""
