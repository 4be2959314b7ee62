//! `vf judge` over HTTPS (docs/JUDGE.md, "HTTPS"): a fake chat-completions
//! endpoint on 127.0.0.1 behind rustls, with the fixed test certificate of
//! tests/support/judge-tls (signed by its `ca.pem`).

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

use super::judge::{completion, judge_cmd, read_request, unit};
use crate::common::{assert_json_eq, root, stderr, tempdir};

fn support(name: &str) -> PathBuf {
    root().join("tests/support/judge-tls").join(name)
}

/// What the endpoint was sent (head, body), or why its TLS session failed.
type Seen = Result<(String, String), String>;

/// A one-request HTTPS endpoint answering 200 with `body`; what it was sent
/// (head, body), or why the TLS session failed, comes back on the channel.
fn https_endpoint(body: String) -> (String, mpsc::Receiver<Seen>) {
    let cert = CertificateDer::from_pem_file(support("server.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_file(support("server.key")).unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls_graviola::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "https://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((tcp, _)) = listener.accept() else {
            return;
        };
        let _ = tcp.set_read_timeout(Some(Duration::from_secs(20)));
        let conn = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        // The handshake first: a client that rejects the certificate ends here.
        if let Err(e) = tls.conn.complete_io(&mut tls.sock) {
            let _ = tx.send(Err(e.to_string()));
            return;
        }
        let request = read_request(&mut tls);
        let _ = tx.send(Ok(request));
        let _ = write!(
            tls,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tls.flush();
        tls.conn.send_close_notify();
        let _ = tls.conn.complete_io(&mut tls.sock);
    });
    (url, rx)
}

#[test]
fn a_verdict_over_https_from_an_endpoint_the_ca_file_trusts() {
    let t = tempdir();
    unit(t.path());
    let content = r#"{"verdict":"pass","score":0.75,"reason":"ok over TLS","answers":[{"id":"r1","score":0.5}]}"#;
    let (url, rx) = https_endpoint(completion(content));
    let out = judge_cmd(t.path(), &url, &[])
        .env("VF_JUDGE_CA_FILE", support("ca.pem"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_json_eq(
        &printed,
        &json!({
            "unit": "u1", "model": "judge-m", "verdict": "pass", "score": 0.75,
            "reason": "ok over TLS",
            "answers": [{"id": "r1", "score": 0.5}],
            "warnings": [],
        }),
    );
    let (head, body) = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
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
}

#[test]
fn an_endpoint_nothing_trusts_is_a_certificate_error_and_nothing_is_sent() {
    let t = tempdir();
    unit(t.path());
    let ok = completion(r#"{"verdict":"pass","score":1,"reason":""}"#);
    let (url, rx) = https_endpoint(ok);
    // No CA file: Mozilla's roots alone do not know the test CA.
    let out = judge_cmd(t.path(), &url, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "printed {:?}", out.stdout);
    assert_eq!(
        stderr(&out),
        "vf: judge: no TLS connection to the judge endpoint: invalid peer certificate: \
         UnknownIssuer (a private CA's certificate goes in VF_JUDGE_CA_FILE)\n"
    );
    // The server saw the handshake fail: no request (and no API key) reached it.
    let seen = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(seen.is_err(), "the endpoint got a request: {seen:?}");
}
