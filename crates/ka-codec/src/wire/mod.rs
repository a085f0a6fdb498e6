//! IP/TCP header views (being written)
