//! Free disk space: said before the first stage and after each one, so a run that fills the
//! disk says so instead of failing with scattered "No space left on device" errors.

use std::path::Path;

use crate::process::human;

/// What a cold run of every stage writes (README, "Prerequisites"): into the cargo target
/// directory, and into the cache (most of it the Swift chroot).
pub const COLD_TARGET: u64 = 5_200 << 20;
pub const COLD_CACHE: u64 = 3_300 << 20;
/// Below this, a failed stage's note says the disk is nearly full.
pub const NEARLY_FULL: u64 = 512 << 20;

/// Bytes available to us on the file system that holds `path` (or its nearest existing
/// ancestor, for a directory not created yet); `None` when the system does not say.
pub fn available(path: &Path) -> Option<u64> {
    path.ancestors().find(|p| p.exists()).and_then(|p| fs4::available_space(p).ok())
}

#[cfg(unix)]
fn same_file_system(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let device = |p: &Path| p.ancestors().find_map(|p| std::fs::metadata(p).ok()).map(|m| m.dev());
    device(a) == device(b)
}

/// Elsewhere, assume the worst: one file system.
#[cfg(not(unix))]
fn same_file_system(_: &Path, _: &Path) -> bool {
    true
}

pub fn announce(target: &Path, cache: &Path) {
    let (Some(t), Some(c)) = (available(target), available(cache)) else {
        return eprintln!("disk: the free space of {} is unknown", target.display());
    };
    eprintln!(
        "disk: {} free for the target directory ({}), {} for the cache ({}); \
         a cold run writes about {} and {} there",
        human(t),
        target.display(),
        human(c),
        cache.display(),
        human(COLD_TARGET),
        human(COLD_CACHE)
    );
    // On one file system both figures are the same space, so the two needs add up.
    let short = if same_file_system(target, cache) { t < COLD_TARGET + COLD_CACHE } else { t < COLD_TARGET || c < COLD_CACHE };
    if short {
        eprintln!(
            "disk: warning: a cold run may not fit; what is already built or cached is reused, \
             so a warm run needs less"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_for_a_directory_not_created_yet() {
        let here = std::env::temp_dir();
        let later = here.join("acp-inject-not-created").join("below");
        let (now, then) = (available(&here).expect("statvfs of the temp dir"), available(&later));
        // Same file system, read a moment apart: equal but for what others wrote meanwhile.
        assert!(then.is_some_and(|b| b.abs_diff(now) < 1 << 30), "{now} vs {then:?}");
    }
}
