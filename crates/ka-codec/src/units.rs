//! units (being written)
