//! The heap in use, counted by the global allocator, for `--max-memory` to bound the whole
//! process (the store's memory, sessions and history included), not only its buffers.
//!
//! A `GlobalAlloc` wrapper is the only way to see every allocation; it is a handful of lines
//! around the system allocator (one relaxed atomic add or subtract per call), so it is written
//! here rather than taken from a crate.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes it hands out and takes back.
pub struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Bytes allocated and not yet freed.
pub fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

// SAFETY: every call goes to `System` with the caller's arguments unchanged; the counter is
// only arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            IN_USE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

/// Under a memory budget: one malloc arena (glibc). With its default of one arena per
/// thread, memory freed on one thread stays resident in that thread's arena, beyond the heap
/// the budget counts: in the load benchmark's flood the agent's peak resident memory was
/// 138 MiB with the default and 105 to 110 MiB with one arena, under a 128 MiB budget.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a tunable; called before the runtime's threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// A size: a number of bytes, or one with a unit (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`, powers
/// of 1024; any case). A few lines, so no crate for it.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: usize = digits.parse().map_err(|_| format!("{text:?} is not a size (say 512MiB or 2GiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("{text:?}: the unit is one of B, KiB, MiB, GiB")),
    };
    n.checked_mul(1usize << shift).filter(|n| *n > 0).ok_or_else(|| format!("{text:?} is not a usable size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_and_without_units() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn the_count_follows_allocations() {
        let before = in_use();
        let v: Vec<u8> = Vec::with_capacity(1 << 20);
        assert!(in_use() >= before + (1 << 20) - 4096, "a 1 MiB allocation is counted");
        drop(v);
    }
}
