//! Test fixture shared by the report tests: copy a real run fixture from tests/data/reports into
//! a directory and regenerate its pages and plots with `shakedown report`.

use std::path::Path;
use std::process::Command;

/// Copy the fixture `name` to `dir` and run `shakedown report` on it; the report must verdict
/// (exit 0, 1 or 2).
pub fn render_fixture(name: &str, dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reports")
        .join(name);
    copy_dir(&src, dir);
    // As tests/common/cli.rs `command()`: the repository's reports/ is protected.
    let out = Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .env(shakedown::store::PROTECT_ENV, repo_reports())
        .arg("report")
        .arg(dir)
        .args(["--check-time-limit", "30"])
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "report failed ({code:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The repository's `reports/` directory, which no test may write under.
pub fn repo_reports() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("reports")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
