//! The source tree keeps the shape issue 21 gave it: no import cycles between files (a
//! child module's `mod` declaration counted as an edge), `commands/` thin, no file past the
//! size limit. `scripts/check-shape.py --strict` says which, and why.

use std::process::Command;

#[test]
fn the_source_tree_has_no_import_cycles_thin_commands_and_no_oversized_file() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg("scripts/check-shape.py")
        .arg("--strict")
        .current_dir(root)
        .output()
        .expect("python3 runs scripts/check-shape.py (.ci/run has it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/check-shape.py --strict failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("import cycles between files (strict (mod declarations count)): 0"),
        "{stdout}"
    );
}
