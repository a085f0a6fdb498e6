//! options (being written)
