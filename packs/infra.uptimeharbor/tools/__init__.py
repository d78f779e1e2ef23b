"""Tools of the pack: plain typed functions plus their contracts."""
