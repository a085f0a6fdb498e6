//! rcp_option (being written)
