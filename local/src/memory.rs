//! How the program takes memory: mimalloc (glibc's malloc for a backup),
//! and no transparent huge pages.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// mimalloc, not glibc's malloc: a batch or a page builds and drops a value
/// per reading, and glibc's free lists were an eighth of the CPU of both
/// (docs/BENCHMARKS.md, "Sixth session"). But `backup`, a command of a few
/// milliseconds that allocates little (SQLite takes its memory from glibc
/// anyway), takes glibc's: mimalloc's first allocation reserves and maps
/// its arena and its exit purges it, about half a millisecond of a
/// process's start and exit on this machine (docs/BENCHMARKS.md, "glibc's
/// malloc for a backup").
#[global_allocator]
pub(crate) static ALLOCATOR: Chosen = Chosen;

/// Whether this process allocates with glibc's malloc. Set at most once, by
/// [`before_main`], before anything is allocated, and never changed: every
/// block is freed by the allocator that gave it.
static GLIBC_MALLOC: AtomicBool = AtomicBool::new(false);

pub(crate) struct Chosen;

// SAFETY: each call goes to one of two allocators that uphold GlobalAlloc's
// contract, the same one for a block's whole life (`GLIBC_MALLOC` does not
// change once anything is allocated).
unsafe impl GlobalAlloc for Chosen {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if GLIBC_MALLOC.load(Relaxed) {
            System.alloc(layout)
        } else {
            mimalloc::MiMalloc.alloc(layout)
        }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if GLIBC_MALLOC.load(Relaxed) {
            System.alloc_zeroed(layout)
        } else {
            mimalloc::MiMalloc.alloc_zeroed(layout)
        }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if GLIBC_MALLOC.load(Relaxed) {
            System.dealloc(ptr, layout)
        } else {
            mimalloc::MiMalloc.dealloc(ptr, layout)
        }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if GLIBC_MALLOC.load(Relaxed) {
            System.realloc(ptr, layout, new_size)
        } else {
            mimalloc::MiMalloc.realloc(ptr, layout, new_size)
        }
    }
}

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
///
/// The same constructor chooses the allocator: glibc passes a constructor
/// the program's arguments, so `backup` is known before the standard
/// library's start-up code makes the first allocation.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[link_section = ".init_array"]
static BEFORE_MAIN: extern "C" fn(
    libc::c_int,
    *const *const libc::c_char,
    *const *const libc::c_char,
) = before_main;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn before_main(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _env: *const *const libc::c_char,
) {
    no_transparent_huge_pages();
    // SAFETY: glibc calls a constructor with `argc` and `argv` as `main`
    // gets them (the standard library reads its arguments the same way):
    // `argv` holds `argc` pointers to C strings.
    unsafe {
        if argc >= 2
            && !argv.is_null()
            && !(*argv.add(1)).is_null()
            && std::ffi::CStr::from_ptr(*argv.add(1)) == c"backup"
        {
            GLIBC_MALLOC.store(true, Relaxed);
        }
    }
}

/// Elsewhere only the huge pages are turned off.
#[cfg(all(target_os = "linux", not(target_env = "gnu")))]
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
