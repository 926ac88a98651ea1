//! Headless Chromium renders a run page built from a real history fixture: the screenshot must
//! be a non-blank PNG and the DOM must carry the expected title. The screenshot is kept in
//! `target/test-output/report_browser/runpage.png` for people to look at.
//!
//! Needs Debian's `chromium` (the test installs it through `provision::host` when run as root).
//! Chromium runs with a fresh profile, no network features, in its own process group, and is killed (by that group's id) after a timeout.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "common/reports.rs"]
mod reports;

const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

fn find_chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Debian's chromium; installed through the project's own install path when missing (as the
/// sandbox's packages are), so `cargo test --release` works on a fresh machine.
fn chromium() -> PathBuf {
    if let Some(p) = find_chromium() {
        return p;
    }
    if let Err(e) = shakedown::provision::host::ensure(&["chromium".to_string()]) {
        panic!("chromium is needed for this test and could not be installed: {e}");
    }
    find_chromium()
        .unwrap_or_else(|| panic!("chromium not found after installing Debian's chromium package"))
}

fn output_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("test-output/report_browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run headless chromium with `args` on `url`; kill its process group after the timeout.
fn run_chromium(profile: &Path, args: &[String], url: &str) -> Output {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let pid = child.id() as i32;
    // Drain output on threads so a chatty chromium cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            // The whole group: chromium's renderer and helper processes too.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!("chromium (pid {pid}) timed out after {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Helpers left behind by the browser, if any, belong to its group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

#[test]
fn headless_chromium_renders_the_run_page() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("serializable-isolate");
    reports::render_fixture("serializable-isolate", &run);
    let page = run.join("index.html");
    assert!(page.is_file());
    let url = format!("file://{}", page.display());
    let shot_dir = output_dir();
    let shot = shot_dir.join("runpage.png");
    let _ = std::fs::remove_file(&shot);

    let profile = tempfile::tempdir().unwrap();
    let o = run_chromium(
        profile.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".to_string(),
        ],
        &url,
    );
    assert!(
        shot.is_file(),
        "no screenshot ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    println!("screenshot: {}", shot.display());

    // Non-blank: decode and look at the pixels.
    let bytes = std::fs::read(&shot).unwrap();
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2000));
    let bpp = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let colours: std::collections::HashSet<&[u8]> = px.chunks(bpp).map(|p| &p[..3]).collect();
    assert!(
        colours.len() > 50,
        "only {} distinct colours",
        colours.len()
    );
    let lum: Vec<f64> = px
        .chunks(bpp)
        .map(|p| (p[0] as f64 + p[1] as f64 + p[2] as f64) / 3.0)
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    assert!(var > 100.0, "luminance variance {var:.1}: page looks blank");
    // The red "invalid" badge is on the page: some strongly red pixels.
    let red = px
        .chunks(bpp)
        .filter(|p| p[0] > 170 && p[1] < 80 && p[2] < 80)
        .count();
    assert!(red > 50, "{red} red pixels: verdict badge not rendered");

    // Title via the DOM.
    let profile = tempfile::tempdir().unwrap();
    let o = run_chromium(profile.path(), &["--dump-dom".to_string()], &url);
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains("<title>shakedown — serializable-isolate</title>"),
        "title missing from DOM ({} bytes): {}",
        dom.len(),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dom.contains("<svg"), "inline plots in the DOM");
}
