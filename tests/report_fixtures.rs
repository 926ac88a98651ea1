//! Reports rendered from real run histories (tests/data/reports/*, see its README): `shakedown
//! report` on a copy of each fixture must write a run page, SVG and PNG plots that are
//! well-formed (SVG parses as XML, PNG decodes) and contain the expected elements: fault bands
//! per kind with labels, anomaly markers, witness tables, the fault timeline and links.
//!
//! Owns nothing but these checks; needs no root and no network.

use shakedown::faults::KINDS;
use shakedown::report::plots::fault_color;
use std::path::{Path, PathBuf};

#[path = "common/reports.rs"]
mod reports;

/// Copy the fixture `name` into a fresh temp dir and run `shakedown report` on it.
fn rendered(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    reports::render_fixture(name, &dir);
    (tmp, dir)
}

/// Parse an SVG strictly as XML; return its text content (all `<text>` nodes) joined by '\n'.
fn svg_texts(path: &Path) -> (String, String) {
    let raw = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&raw)
        .unwrap_or_else(|e| panic!("{}: not well-formed XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    (raw, texts.join("\n"))
}

/// Decode a PNG and return (width, height, distinct colours).
fn png_info(path: &Path) -> (u32, u32, usize) {
    let bytes = std::fs::read(path).unwrap();
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(bpp).collect();
    (info.width, info.height, colours.len())
}

/// Band rectangles of `kind` in a plotters SVG.
fn bands(svg: &str, kind: &str) -> usize {
    let c = fault_color(kind);
    let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&fill) && l.contains("opacity=\"0.18\""))
        .count()
}

fn check_plot_files(dir: &Path, stems: &[&str]) {
    for stem in stems {
        let (_, texts) = svg_texts(&dir.join(format!("{stem}.svg")));
        assert!(
            texts.contains("time (s)") || *stem == "stale-reads",
            "{stem}: axis"
        );
        let (w, h, colours) = png_info(&dir.join(format!("{stem}.png")));
        assert_eq!((w, h), (1200, 600), "{stem}.png size");
        assert!(colours > 10, "{stem}.png: only {colours} colours");
    }
}

#[test]
fn anomalous_run_renders_witnesses_markers_and_stale_reads() {
    let (_tmp, dir) = rendered("serializable-isolate");
    check_plot_files(
        &dir,
        &[
            "latency-raw",
            "latency-quantiles",
            "throughput",
            "anomalies",
            "stale-reads",
        ],
    );
    assert!(
        !dir.join("clock-offsets.svg").exists(),
        "no clock data → no clock plot"
    );
    // Anomaly markers: a legend entry for the linearizability checker and cross markers.
    let (raw, texts) = svg_texts(&dir.join("anomalies.svg"));
    assert!(texts.contains("linearizable ("), "{texts}");
    assert!(raw.matches("<line").count() > 10, "cross markers");
    assert!(
        bands(&raw, "partition") >= 2,
        "partition bands on the anomaly plot"
    );
    let (_, stale) = svg_texts(&dir.join("stale-reads.svg"));
    assert!(
        stale.contains("versions behind") && stale.contains("ms behind"),
        "{stale}"
    );
    // Bands with labels on the latency plot: the isolate partitions.
    let (raw, texts) = svg_texts(&dir.join("latency-raw.svg"));
    assert!(bands(&raw, "partition") >= 2);
    assert!(texts.contains("isolate n"), "band labels: {texts}");
    // The run page: verdict, witness table, link to the witness page, timeline, files.
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<title>shakedown — serializable-isolate</title>"));
    assert!(html.contains("badge invalid"));
    assert!(html.contains("<td>cannot linearize</td>"), "witness table");
    assert!(html.contains("<td>minimal witness</td>"));
    assert!(html.contains("href=\"linearizability.html\""));
    assert!(dir.join("linearizability.html").is_file());
    assert!(html.contains("Stale reads:"));
    assert!(html.contains("class=\"tl-bar\""), "fault timeline");
    for f in [
        "history.jsonl",
        "faults.jsonl",
        "logs/n1/etcd.log",
        "anomalies.png",
    ] {
        assert!(html.contains(&format!("href=\"{f}\"")), "link {f}");
    }
    assert!(html.contains("Not drawn: Clock offsets"));
    // Configuration as a person would write it: the db named once, specs as key/value tables.
    assert!(html.contains("<tr><th>db</th><td>etcd 3.4.23</td></tr>"));
    assert!(html.contains("<b>register</b><table class=\"kv\">"));
    assert!(
        html.contains("<td>partition (shape one)</td>"),
        "nemesis faults"
    );
    assert!(
        !html.contains("&quot;cas_weight&quot;"),
        "raw workload JSON"
    );
    // The last fault's recovery could not be seen, and the summary says why, per fault.
    assert!(html.contains(
        "1 not measured — isolate n1 at 15.3 s: the workload stopped before recovery could be seen"
    ));
    // Outages summarised per group above the plots, every one folded after them.
    let (plots, details) = (
        html.find("id=\"plots\"").unwrap(),
        html.find("<details id=\"outages\">").unwrap(),
    );
    assert!(
        plots < details,
        "the full outage list comes after the plots"
    );
    assert!(html.contains("worst groups (all nodes first)"));
    // The final heal and settle before the final reads are drawn as their own band.
    let (_, texts) = svg_texts(&dir.join("throughput.svg"));
    assert!(
        texts.contains("no client ops: final heal, settle"),
        "{texts}"
    );
    // Top-down for a person: the verdict and the first witness (the earliest unlinearizable
    // read, with its table), then the plots, then the tables; the configuration folded.
    let at = |s: &str| {
        html.find(s)
            .unwrap_or_else(|| panic!("{s} missing from the run page"))
    };
    let order = [
        at("<h2 id=\"verdict\">"),
        at("<div class=\"witness\" id=\"first-witness\">"),
        at("<b>First witness</b> (linearizable) at 7.348 s:"),
        at("<td>cannot linearize</td>"),
        at("<h2 id=\"plots\">"),
        at("<h2 id=\"checkers\">"),
        at("<h2 id=\"faults\">"),
        at("<h2 id=\"recovery\">"),
        at("<details id=\"configuration\"><summary><h2>Configuration</h2></summary>"),
        at("<tr><th>db</th>"),
        at("<h2 id=\"files\">"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(
        !html.contains("<details open"),
        "folded sections start closed"
    );
    assert!(!html.contains("<script") && !html.contains("https://"));
    assert!(html.len() < 4_000_000, "bounded page: {} bytes", html.len());

    // A run directory from a version that recorded every field of the spec but not the knobs
    // its kind reads: the register's knobs only, from the core's vocabulary.
    let test_json = dir.join("test.json");
    let mut test: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&test_json).unwrap()).unwrap();
    assert!(
        test["workload"].get("knobs").is_none(),
        "an old run directory"
    );
    for (k, v) in [("append_weight", 1), ("add_weight", 10), ("max_mops", 4)] {
        test["workload"]["spec"][k] = v.into();
    }
    std::fs::write(&test_json, test.to_string()).unwrap();
    shakedown::report::page::write_run_page(&dir).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<b>register</b><table class=\"kv\"><tr><th>read weight</th>"));
    for other in ["append weight", "add weight", "max mops"] {
        assert!(!html.contains(other), "a register run lists {other}");
    }
}

/// Fault kinds the all-faults fixture really applied (delay was refused: no netem here; promote
/// is not built yet).
const APPLIED: [&str; 6] = ["partition", "kill", "pause", "clock", "loss", "bandwidth"];

#[test]
fn all_fault_kinds_run_renders_a_band_per_kind_and_clock_offsets() {
    let (_tmp, dir) = rendered("all-faults");
    check_plot_files(
        &dir,
        &[
            "latency-raw",
            "latency-quantiles",
            "throughput",
            "clock-offsets",
        ],
    );
    for stem in [
        "latency-raw",
        "latency-quantiles",
        "throughput",
        "clock-offsets",
    ] {
        let (raw, texts) = svg_texts(&dir.join(format!("{stem}.svg")));
        for k in KINDS.iter().filter(|k| APPLIED.contains(&k.name)) {
            assert!(bands(&raw, k.name) >= 1, "{stem}: no {} band", k.name);
            assert!(
                texts.contains(&format!("fault: {}", k.name)),
                "{stem}: {} legend",
                k.name
            );
        }
        // The refused netem delay (no netem in this kernel) is not drawn as a fault.
        assert_eq!(
            bands(&raw, "delay"),
            0,
            "{stem}: a band for a delay that never applied"
        );
        for label in [
            "bump-clock",
            "strobe-clock",
            "loss 10%",
            "bandwidth 200 kbit/s",
        ] {
            assert!(texts.contains(label), "{stem}: label {label:?} missing");
        }
    }
    let (_, texts) = svg_texts(&dir.join("clock-offsets.svg"));
    for node in ["n1", "n2", "n3", "n4", "n5"] {
        assert!(texts.lines().any(|l| l == node), "clock legend {node}");
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for k in KINDS.iter().filter(|k| APPLIED.contains(&k.name)) {
        assert!(
            html.contains(&format!("<span class=\"tl-name\">{}</span>", k.label)),
            "timeline row {}",
            k.name
        );
    }
    assert!(html.contains("id=\"plot-clock-offsets\""));
    assert!(html.contains(
        "<tr><th>db</th><td>postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)</td></tr>"
    ));
    // The requested netem delay was drawn once and refused: the page says so.
    assert!(html.contains("Requested but never in effect"));
    assert!(html.contains(
        "<li><b>delay</b>: drawn 1 time, never took effect: netem not available in this kernel"
    ));
}
