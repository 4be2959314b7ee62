//! Temporal through TLS, configured the way Temporal's own clients are.

use std::process::Command;
use std::time::Duration;

use super::{Lab, plan_units, result, row};
use crate::common::*;

/// TLS comes from Temporal's own client configuration (`TEMPORAL_TLS`,
/// `TEMPORAL_TLS_SERVER_CA_CERT_PATH`), not from vf flags: through a TLS
/// proxy with the judge's test CA, a plan runs; without that CA it is refused.
#[test]
fn tls_comes_from_the_temporal_client_configuration() {
    use std::io::BufRead;
    let Some(lab) = Lab::new("tls") else { return };
    let certs = root().join("tests/support/judge-tls");
    let target = lab.address.rsplit(':').next().unwrap();
    let mut proxy = Command::new("python3")
        .arg(root().join("tests/support/tls_proxy.py"))
        .args([certs.join("server.pem"), certs.join("server.key")])
        .arg(target)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(proxy.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("ready ")
        .expect("the proxy's port")
        .to_string();
    let tls = Lab {
        env: Env::new(),
        address: format!("127.0.0.1:{port}"),
        queue: lab.queue.clone(),
    };
    std::fs::create_dir_all(tls.path().join("runs")).unwrap();
    tls.unit("a", "");
    tls.env.write("plan.toml", plan_units(&[("a", &[])], ""));
    let ca = certs.join("ca.pem");
    let ca = ca.to_str().unwrap();
    let with_tls = [
        ("TEMPORAL_TLS", "true"),
        ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", ca),
    ];
    let _w = tls.worker_env("w1", &with_tls);
    let mut c = tls.orchestrate(&["--follow", "--json"]);
    c.envs(with_tls);
    let out = run_bounded(c, Duration::from_secs(120));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(row(&result(&out), "a")["state"], "done");
    // Without the CA the certificate is refused: not ready (3).
    let mut c = tls.orchestrate(&["--detach"]);
    c.env("TEMPORAL_TLS", "true");
    let out = run_bounded(c, Duration::from_secs(60));
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach Temporal") && err.contains("UnknownIssuer"),
        "{err}"
    );
}
