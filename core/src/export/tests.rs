//! Unit tests of the exporters: the exact lines each format writes, that our own readers read
//! them back to the same ops, and what each format refuses.

use super::*;
use crate::import::{InputFormat, read_text};
use serde_json::json;

fn op(t: OpType, p: Option<u64>, f: &str, key: Option<&str>, v: Value, ms: u64) -> Op {
    let process = p.map_or(Process::Nemesis, Process::Client);
    let mut o = Op::new(t, process, f, v);
    o.key = key.map(Into::into);
    o.time_ns = ms * 1_000_000;
    o
}

/// A keyed register history: a write, a read, a failed cas with an error, a nemesis op, a node.
fn register() -> History {
    let mut ops = vec![
        op(OpType::Invoke, Some(0), "write", Some("1"), json!(3), 1),
        op(OpType::Ok, Some(0), "write", Some("1"), json!(3), 2),
        op(
            OpType::Info,
            None,
            "start-partition",
            None,
            json!({"grudge": {"n1": ["n2"]}}),
            3,
        ),
        op(OpType::Invoke, Some(1), "cas", Some("k2"), json!([3, 4]), 4),
        op(OpType::Fail, Some(1), "cas", Some("k2"), json!([3, 4]), 5),
        op(OpType::Invoke, Some(2), "read", Some("1"), Value::Null, 6),
        op(OpType::Ok, Some(2), "read", Some("1"), json!(3), 7),
    ];
    ops[4].error = Some("cas-mismatch".into());
    ops[5].node = Some("n3".into());
    History::from_ops(ops)
}

/// The fields a re-import must keep.
fn fields(h: &History) -> Vec<(OpType, Process, String, Option<String>, Value, u64)> {
    h.ops
        .iter()
        .map(|o| {
            (
                o.op_type,
                o.process,
                o.f.to_string(),
                o.key.as_ref().map(|k| k.to_string()),
                o.value.clone(),
                o.time_ns,
            )
        })
        .collect()
}

fn reread(text: &str, format: InputFormat) -> History {
    read_text(text, "exported", Some(format), None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .history
}

#[test]
fn edn_is_one_jepsen_op_map_per_line_and_reads_back_the_same() {
    let h = register();
    let e = export(&h, ExportFormat::Edn).unwrap();
    let lines: Vec<&str> = e.text.lines().collect();
    assert_eq!(e.ops, 7);
    assert_eq!(
        lines[0],
        "{:type :invoke, :f :write, :value [1 3], :process 0, :time 1000000, :index 0}"
    );
    assert_eq!(
        lines[2],
        "{:type :info, :f :start-partition, :value {\"grudge\" {\"n1\" [\"n2\"]}}, :process :nemesis, :time 3000000, :index 2}"
    );
    assert_eq!(
        lines[4],
        "{:type :fail, :f :cas, :value [\"k2\" [3 4]], :process 1, :time 5000000, :index 4, :error \"cas-mismatch\"}"
    );
    assert_eq!(
        lines[5],
        "{:type :invoke, :f :read, :value [1 nil], :process 2, :time 6000000, :index 5, :node \"n3\"}"
    );
    let back = reread(&e.text, InputFormat::Edn);
    assert_eq!(fields(&back), fields(&h));
    assert_eq!(back.ops[4].error.as_deref(), Some("cas-mismatch"));
    assert_eq!(back.ops[5].node.as_deref(), Some("n3"));
}

#[test]
fn elle_json_is_an_array_of_op_objects_and_reads_back_the_same() {
    let h = register();
    let e = export(&h, ExportFormat::ElleJson).unwrap();
    let lines: Vec<&str> = e.text.lines().collect();
    assert_eq!(lines[0], "[");
    assert_eq!(
        lines[1],
        r#"{"type":"invoke","f":"write","value":[1,3],"process":0,"time":1000000,"index":0},"#
    );
    assert_eq!(
        lines[3],
        r#"{"type":"info","f":"start-partition","value":{"grudge":{"n1":["n2"]}},"process":"nemesis","time":3000000,"index":2},"#
    );
    assert_eq!(*lines.last().unwrap(), "]");
    let parsed: Value = serde_json::from_str(&e.text).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 7);
    let back = reread(&e.text, InputFormat::Json);
    assert_eq!(fields(&back), fields(&h));
}

#[test]
fn transactions_are_written_the_way_elle_writes_them() {
    let mops = json!([["append", "x", 1], ["r", "x", [1]], ["r", 5, null]]);
    let mut h = History::from_ops(vec![
        op(OpType::Invoke, Some(0), "txn", None, mops.clone(), 1),
        op(OpType::Ok, Some(0), "txn", None, mops, 2),
    ]);
    // As a JSONL file without indexes reads: the export numbers ops by position.
    for o in &mut h.ops {
        o.index = 0;
    }
    let e = export(&h, ExportFormat::Edn).unwrap();
    assert!(
        e.text
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(":time 2000000, :index 1}"),
        "{}",
        e.text
    );
    assert!(
        e.text.starts_with(
            "{:type :invoke, :f :txn, :value [[:append :x 1] [:r :x [1]] [:r 5 nil]],"
        ),
        "{}",
        e.text
    );
    assert_eq!(fields(&reread(&e.text, InputFormat::Edn)), fields(&h));
    let j = export(&h, ExportFormat::ElleJson).unwrap();
    assert!(
        j.text
            .contains(r#""value":[["append","x",1],["r","x",[1]],["r",5,null]]"#)
    );
    assert_eq!(fields(&reread(&j.text, InputFormat::Json)), fields(&h));
}

#[test]
fn porcupine_gets_its_kv_lines_with_reads_and_writes_renamed_and_no_nemesis() {
    let mut ops = register().ops;
    ops.retain(|o| o.f != "cas");
    let h = History::from_ops(ops);
    let e = export(&h, ExportFormat::Porcupine).unwrap();
    assert_eq!(
        e.text,
        concat!(
            "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"3\"}\n",
            "{:process 0, :type :ok, :f :put, :key \"1\", :value \"3\"}\n",
            "{:process 2, :type :invoke, :f :get, :key \"1\", :value nil}\n",
            "{:process 2, :type :ok, :f :get, :key \"1\", :value \"3\"}\n",
        )
    );
    assert_eq!(e.ops, 4);
    assert_eq!(e.notes.len(), 2);
    assert!(
        e.notes[1].contains("left out 1 nemesis op(s)"),
        "{:?}",
        e.notes
    );
    let back = reread(&e.text, InputFormat::Porcupine);
    assert_eq!(back.ops[3].value, json!("3"));
    assert_eq!(back.ops[2].f, "get");
    // A nil read is "" (where Porcupine's keys start); a key-less op goes under "".
    let h = History::from_ops(vec![
        op(OpType::Invoke, Some(0), "read", None, Value::Null, 1),
        op(OpType::Ok, Some(0), "read", None, Value::Null, 2),
    ]);
    assert_eq!(
        export(&h, ExportFormat::Porcupine).unwrap().text,
        "{:process 0, :type :invoke, :f :get, :key \"\", :value nil}\n{:process 0, :type :ok, :f :get, :key \"\", :value \"\"}\n"
    );
}

#[test]
fn what_a_format_cannot_hold_is_an_error_in_words() {
    let e = export(&register(), ExportFormat::Porcupine).unwrap_err();
    assert_eq!(
        e,
        "Porcupine's kv lines hold get, put and append ops (read and write are written as get and put); this history also has cas ×2: export it as edn or elle-json"
    );
    let h = History::from_ops(vec![
        op(OpType::Invoke, Some(0), "write", None, json!([1, 2]), 1),
        op(OpType::Ok, Some(0), "write", None, json!([1, 2]), 2),
    ]);
    assert_eq!(
        export(&h, ExportFormat::Porcupine).unwrap_err(),
        "op 0 (process 0 write): Porcupine's kv values are strings, and [1,2] has no string form"
    );
    let mut mixed = register().ops;
    mixed[0].key = None;
    let e = export(&History::from_ops(mixed), ExportFormat::Edn).unwrap_err();
    assert!(
        e.contains("op 0 (process 0 write) has none: jepsen.independent tuples need a key on every client op"),
        "{e}"
    );
    let mut h = register();
    h.invokes_synthesized = true;
    assert!(
        export(&h, ExportFormat::ElleJson)
            .unwrap_err()
            .contains("completions only")
    );
}

#[test]
fn formats_parse_by_name() {
    for (name, f) in ExportFormat::ALL {
        assert_eq!(ExportFormat::parse(name), Ok(f));
        assert_eq!(f.name(), name);
    }
    assert_eq!(
        ExportFormat::parse("knossos").unwrap_err(),
        "--format \"knossos\": expected edn, porcupine or elle-json"
    );
}
