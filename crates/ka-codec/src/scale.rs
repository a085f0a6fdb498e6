//! scale (being written)
