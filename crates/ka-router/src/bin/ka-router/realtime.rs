//! `--realtime`: SCHED_FIFO for the pacing thread.
//!
//! The only `unsafe` in ka: one `sched_setscheduler(2)` call, which neither
//! `std` nor the crates in our tree wrap. The library forbids `unsafe`, so
//! the binary hands this in as the pacing thread's init hook.

use std::io;
use std::sync::Arc;

use ka_router::shell::ThreadInit;

/// A hook that puts the calling thread in SCHED_FIFO at `priority`.
pub fn init(priority: i32) -> ThreadInit {
    ThreadInit(Arc::new(move || set_fifo(priority)))
}

#[allow(unsafe_code)]
fn set_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid, initialised `sched_param` that outlives the
    // call; pid 0 means the calling thread; the call only reads `param`.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        tracing::info!(priority, "pacing thread runs SCHED_FIFO");
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
