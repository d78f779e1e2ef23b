"""The graph floor: vocabulary, projection, store, SHACL, queries, OWL."""
