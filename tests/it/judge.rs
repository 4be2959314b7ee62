//! `vf judge`: the unconfigured refusal, and strict validation of what a
//! fake chat-completions endpoint on 127.0.0.1 answers (docs/JUDGE.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{assert_json_eq, stderr, tempdir, vf_cli};
use vf::engine::EngineId;
use vf::unit::marker::{Marker, MarkerStore, UnitState};

/// What the fake endpoint does with the one request it takes.
enum Reply {
    /// An HTTP status and this body.
    Body(u16, String),
    /// Reads the request and never answers.
    Hang,
    /// Sends the head and half the body, then nothing more.
    HangInBody,
}

/// A one-request endpoint; the request (head and body) comes back on the channel.
fn endpoint(reply: Reply) -> (String, mpsc::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let (head, body) = read_request(&stream);
        let _ = tx.send((head, body));
        let mut stream = stream;
        match reply {
            Reply::Body(status, body) => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            Reply::Hang => std::thread::sleep(Duration::from_secs(30)),
            Reply::HangInBody => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{{\"choices\""
                );
                let _ = stream.flush();
                std::thread::sleep(Duration::from_secs(30));
            }
        }
    });
    (url, rx)
}

pub(crate) fn read_request(stream: impl Read) -> (String, String) {
    let mut r = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (head, String::from_utf8(body).unwrap())
}

/// A finished unit `u1` with a summary and two recorded answers.
pub(crate) fn unit(state: &Path) {
    let store = MarkerStore::new(state);
    let mut m = Marker::new("u1", EngineId::Claude, state);
    m.state = UnitState::Done;
    m.summary = Some(json!({"status": "ok", "files": 2}));
    store.save(&mut m).unwrap();
    vf::unit::history::record(
        state,
        "u1",
        EngineId::Claude,
        1,
        UnitState::Failed,
        "first try",
    )
    .unwrap();
    vf::unit::history::record(
        state,
        "u1",
        EngineId::Claude,
        2,
        UnitState::Done,
        "fixed it",
    )
    .unwrap();
}

fn judge(state: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    judge_cmd(state, url, extra).output().unwrap()
}

/// `vf judge u1 --json` configured for `url`.
pub(crate) fn judge_cmd(state: &Path, url: &str, extra: &[&str]) -> assert_cmd::Command {
    let mut c = vf_cli();
    c.args(["judge", "u1", "--json", "--state-dir"])
        .arg(state)
        .args(extra)
        .env("VF_JUDGE_ENDPOINT", url)
        .env("VF_JUDGE_MODEL", "judge-m")
        .env("VF_JUDGE_API_KEY", "k-123");
    c
}

pub(crate) fn completion(content: &str) -> String {
    json!({"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})
        .to_string()
}

#[test]
fn a_valid_verdict_is_printed_and_what_was_sent_is_the_recorded_answers() {
    let t = tempdir();
    unit(t.path());
    let content = r#"{"verdict":"pass","score":0.9,"reason":"tests pass","answers":[{"id":"r2","score":1,"note":"good"},{"id":"r7","score":0.1}]}"#;
    let (url, rx) = endpoint(Reply::Body(200, completion(content)));
    let out = judge(t.path(), &url, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_json_eq(
        &printed,
        &json!({
            "unit": "u1", "model": "judge-m", "verdict": "pass", "score": 0.9,
            "reason": "tests pass",
            "answers": [{"id": "r2", "score": 1.0, "note": "good"}],
            "warnings": ["judge: unknown answer id \"r7\" dropped"],
        }),
    );
    assert!(stderr(&out).contains("warning: judge: unknown answer id \"r7\" dropped"));
    let (head, body) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer k-123\r\n"),
        "{head}"
    );
    let sent: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(sent["model"], "judge-m");
    assert_eq!(
        sent["messages"][0]["content"],
        vf::report::judge::INSTRUCTIONS
    );
    let input: Value =
        serde_json::from_str(sent["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_json_eq(
        &input,
        &json!({
            "unit": "u1", "engine": "claude", "state": "done",
            "summary": {"status": "ok", "files": 2},
            "answers": [
                {"id": "r1", "attempt": 1, "state": "failed", "text": "first try", "truncated": false},
                {"id": "r2", "attempt": 2, "state": "done", "text": "fixed it", "truncated": false},
            ],
        }),
    );
}

#[test]
fn a_fail_verdict_exits_1() {
    let t = tempdir();
    unit(t.path());
    let (url, _rx) = endpoint(Reply::Body(
        200,
        completion(r#"{"verdict":"fail","score":0,"reason":"broken"}"#),
    ));
    let out = judge(t.path(), &url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["verdict"], "fail");
}

#[test]
fn an_invalid_response_is_an_error_never_a_verdict() {
    let t = tempdir();
    unit(t.path());
    let cases: Vec<(u16, String, &str)> = vec![
        (200, "not json".into(), "the body is not JSON"),
        (200, r#"{"choices":"x"}"#.into(), "no `choices` array"),
        (
            200,
            completion("{\"verdict\":\"pass\",\"score\":NaN,\"reason\":\"\"}"),
            "not a JSON verdict",
        ),
        (
            200,
            completion("{\"verdict\":\"pass\",\"score\":-Infinity,\"reason\":\"\"}"),
            "not a JSON verdict",
        ),
        (
            200,
            completion("{\"verdict\":\"pass\",\"score\":1e400,\"reason\":\"\"}"),
            "not a JSON verdict",
        ),
        (
            200,
            r#"{"choices":[{"message":{"content":"{}"}}],"usage":{"total":1e400}}"#.into(),
            "the body is not JSON",
        ),
        (
            200,
            completion(r#"{"verdict":"pass","score":1.01,"reason":""}"#),
            "`score` 1.01 is not within 0..=1",
        ),
        (
            200,
            completion(
                r#"{"verdict":"pass","score":1,"reason":"","answers":[{"id":"r1","score":-1}]}"#,
            ),
            "not within 0..=1",
        ),
        (500, "{}".into(), "answered HTTP 500"),
    ];
    for (status, body, want) in cases {
        let (url, _rx) = endpoint(Reply::Body(status, body.clone()));
        let out = judge(t.path(), &url, &[]);
        assert_eq!(out.status.code(), Some(1), "{body}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{body}: printed {:?}", out.stdout);
        assert!(stderr(&out).contains(want), "{body}: {}", stderr(&out));
    }
}

#[test]
fn a_hanging_endpoint_ends_within_the_timeout() {
    let t = tempdir();
    unit(t.path());
    let (url, _rx) = endpoint(Reply::Hang);
    let start = Instant::now();
    let out = judge(t.path(), &url, &["--timeout", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        stderr(&out).contains("did not answer within 1s"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_body_that_stops_halfway_ends_within_the_timeout_and_a_closed_port_is_unreachable() {
    let t = tempdir();
    unit(t.path());
    let (url, _rx) = endpoint(Reply::HangInBody);
    let start = Instant::now();
    let out = judge(t.path(), &url, &["--timeout", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    let out = judge(t.path(), &closed, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("vf: judge: the judge endpoint could not be reached: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unconfigured_it_refuses_and_sends_nothing() {
    let t = tempdir();
    unit(t.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    for unset in ["VF_JUDGE_ENDPOINT", "VF_JUDGE_MODEL", "VF_JUDGE_API_KEY"] {
        let out = vf_cli()
            .args(["judge", "u1", "--state-dir"])
            .arg(t.path())
            .env("VF_JUDGE_ENDPOINT", &url)
            .env("VF_JUDGE_MODEL", "m")
            .env("VF_JUDGE_API_KEY", "k")
            .env_remove(unset)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "vf: the judge is not configured: set {unset} (docs/JUDGE.md); nothing was sent\n"
            )
        );
    }
    // Plain http:// to a host that is not loopback: the key would cross the network in clear.
    let clear = judge(t.path(), "http://192.0.2.1:9/v1", &[]);
    assert_eq!(clear.status.code(), Some(2), "{}", stderr(&clear));
    assert_eq!(
        stderr(&clear),
        "vf: VF_JUDGE_ENDPOINT \"http://192.0.2.1:9/v1\" is plain http:// to a host that is not \
         loopback: the API key would cross the network in clear; use https://; nothing was sent\n"
    );
    let not_pem = judge_cmd(t.path(), &url, &[])
        .env("VF_JUDGE_CA_FILE", t.path().join("units/u1/marker.json"))
        .output()
        .unwrap();
    assert_eq!(not_pem.status.code(), Some(2), "{}", stderr(&not_pem));
    assert!(
        stderr(&not_pem).contains("holds no PEM certificate; nothing was sent"),
        "{}",
        stderr(&not_pem)
    );
    let unknown = vf_cli()
        .args(["judge", "nope", "--state-dir"])
        .arg(t.path())
        .env("VF_JUDGE_ENDPOINT", &url)
        .env("VF_JUDGE_MODEL", "m")
        .env("VF_JUDGE_API_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a refused judge connected to the endpoint"
    );
}
