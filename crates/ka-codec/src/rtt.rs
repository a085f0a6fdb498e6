//! rtt (being written)
