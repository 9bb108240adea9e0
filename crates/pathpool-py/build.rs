//! The engine's identity: a hash of the simulator's and the algorithms' sources, so a cache of
//! simulator runs (`pathpool.sweep`) never answers for another simulator with the same version
//! number.

use std::fs;
use std::path::{Path, PathBuf};

/// FNV-1a, 64 bits: stable across toolchains (std's hasher is not promised to be).
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for krate in ["pathpool-sim", "pathpool-cc"] {
        let src = root.join(krate).join("src");
        println!("cargo:rerun-if-changed={}", src.display());
        let mut all = Vec::new();
        files(&src, &mut all);
        all.sort();
        for p in all {
            let rel = p
                .strip_prefix(&root)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            h = fnv1a(h, rel.as_bytes());
            h = fnv1a(h, &fs::read(&p).unwrap_or_default());
        }
    }
    println!("cargo:rustc-env=PATHPOOL_ENGINE_ID={h:016x}");
}
