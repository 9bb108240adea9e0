//! Cache hints for the event loop. Most of a large run's time goes to waiting for memory: a
//! packet is read an RTT (or a full buffer) after it was written, and a lane's entries a
//! buffer's worth of events after they were appended. Fetching them a few events early hides
//! that wait. Hints only: they change no result.

/// Start loading the cache lines of `*r` (at most `LINES` of them) into L1.
#[inline(always)]
pub(crate) fn prefetch<T, const LINES: usize>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let a = (r as *const T).cast::<i8>();
        for i in 0..LINES.min(std::mem::size_of::<T>().div_ceil(64)) {
            // SAFETY: prefetch is a hint that never faults and reads nothing into the program;
            // SSE is part of the x86_64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(64 * i)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
