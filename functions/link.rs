//! The build script of every function crate (`build = "../link.rs"`): its
//! binary is linked as a position-dependent executable (`-no-pie`), as Go
//! links its Lambda binaries. A PIE's dynamic relocations (1.3 MB in
//! `query`) are bytes in the zip and pages the loader writes at every cold
//! start; without them the binary is 5-10 % smaller and starts with fewer
//! pages resident (docs/BENCHMARKS.md, "Function footprint"). Only the
//! executable's own image loses address randomization; its libraries, heap
//! and stacks keep it. `ingester-local` and the tests stay PIE.

fn main() {
    // The linker is gcc/clang here, zig's under cargo-lambda: all take it.
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rerun-if-changed=../link.rs");
}
