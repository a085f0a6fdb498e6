//! ka-codec placeholder
#![no_std]
