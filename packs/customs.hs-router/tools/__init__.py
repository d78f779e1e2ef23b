"""Tools of the pack: read-only nomenclature lookup and the classification run."""
