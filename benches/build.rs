//! The floors of the footprint bench are linked as the functions are
//! (`functions/link.rs`: `-no-pie`), so that the ratios compare like with
//! like.

fn main() {
    for floor in ["hello-lambda", "hello-dynamodb"] {
        println!("cargo:rustc-link-arg-bin={floor}=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
