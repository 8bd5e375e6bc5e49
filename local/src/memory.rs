//! How the program takes memory: mimalloc, and no transparent huge pages.

/// mimalloc, not glibc's malloc: a batch or a page builds and drops a value
/// per reading, and glibc's free lists were an eighth of the CPU of both
/// (docs/BENCHMARKS.md, "Sixth session").
#[global_allocator]
pub(crate) static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages for this process, unless `MIMALLOC_ALLOW_THP`
/// says otherwise. mimalloc asks for them on its arenas, and the kernel then
/// clears a 2 MiB page at the first touch of each: a server's first batches
/// took 5-12 ms where the others take 0.7, for a heap of a few MB that
/// huge pages do not speed up, and a larger resident size
/// (docs/BENCHMARKS.md, "Eighth session"). This is what mimalloc does itself
/// with `MIMALLOC_ALLOW_THP=0`, which it reads before `main` runs.
///
/// It runs as a constructor, before the standard library's start-up code
/// allocates for the main thread: from `main` it came after that first
/// touch, and every command paid for clearing a huge page (0.3 to 2 ms of a
/// 2 MB backup's 14, docs/BENCHMARKS.md, "Backup during ingest"). It reads
/// the environment with `getenv`, which allocates nothing.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static NO_TRANSPARENT_HUGE_PAGES: extern "C" fn() = no_transparent_huge_pages;

#[cfg(target_os = "linux")]
extern "C" fn no_transparent_huge_pages() {
    // SAFETY: getenv reads the environment, which nothing changes before
    // main; PR_SET_THP_DISABLE takes integers and touches no memory of ours:
    // it sets a flag of the process's address space.
    unsafe {
        if libc::getenv(c"MIMALLOC_ALLOW_THP".as_ptr()).is_null() {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}
