//! Temporal losing a worker, a link or itself (issue 38): a worker killed a
//! second after its engine named the session resumes it exactly; a cancel
//! ends the engines within the grace; a retry that lands on the worker still
//! running the attempt attaches to that run; a follower whose server went
//! away exits 3 with the plan's last known state.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::server::own_server;
use super::*;

/// Unit `a` prints its session id and a first answer, then hangs; `keys`
/// go to its plan.
fn hang_after_session(lab: &Lab, keys: &str) {
    let head: Vec<String> = read_text(&fixture(CAPTURE))
        .lines()
        .take(3)
        .map(String::from)
        .collect();
    lab.env.write("head.jsonl", head.join("\n") + "\n");
    let head = lab.path().join("head.jsonl");
    lab.env.write(
        "a/fake.env",
        format!("FAKE_STDOUT={}\nFAKE_MODE=hang\n", head.display()),
    );
    lab.env.write("plan.toml", plan_units(&[("a", &[])], keys));
}

fn marker_has_session(lab: &Lab, worker: &str) -> bool {
    let dir = lab.path().join(worker).join("temporal");
    has_session(&walk_text(&dir, "units/a/marker.json"))
}

/// The SDK sent heartbeats at most every 0.8 x the heartbeat timeout (8 s
/// here), so a worker lost within that window after the id was retried as
/// a fresh session. The id now goes out at once.
#[test]
fn a_worker_killed_a_second_after_the_session_id_is_resumed_exactly() {
    let Some(lab) = Lab::new("kill-1s") else {
        return;
    };
    hang_after_session(&lab, "stall_timeout = 10");
    let mut w = lab.worker("w1");
    lab.submit_detached();
    wait_for("the session id", Duration::from_secs(60), || {
        marker_has_session(&lab, "w1")
    });
    // The case: the worker lost one second after the id.
    std::thread::sleep(Duration::from_secs(1));
    w.kill9();
    lab.unit("a", "");
    let w = lab.worker("w1");
    let r = lab.follow(0);
    let a = row(&r, "a");
    assert_eq!(
        (a["state"].as_str(), a["start"].as_str(), a["host"].as_str()),
        (Some("done"), Some("exactResume"), Some(w.host.as_str())),
        "{a}"
    );
    let starts = lab.starts("a");
    let args = read_text(&lab.path().join(format!("runs/a.{}.args", starts[1])));
    assert!(args.contains(a["sessionId"].as_str().unwrap()), "{args}");
}

/// A cancel used to reach the worker on the SDK's heartbeat schedule (48 s
/// with the default 60 s heartbeat timeout); now within the worker's 2 s
/// beat, then the grace (engines that ignore SIGTERM use all of it).
#[test]
fn a_cancel_ends_the_engines_within_the_grace_and_a_few_seconds() {
    let Some(lab) = Lab::new("cancel-fast") else {
        return;
    };
    lab.unit("a", "FAKE_MODE=ignore-term");
    lab.unit("b", "FAKE_MODE=ignore-term");
    lab.env
        .write("plan.toml", plan_units(&[("a", &[]), ("b", &[])], ""));
    let _w = lab.worker_env("w1", &[("VF_KILL_GRACE_MS", "2000")]);
    let id = lab.submit_detached();
    wait_for("both engines to start", Duration::from_secs(60), || {
        lab.starts("a").len() + lab.starts("b").len() == 2
    });
    let pids = [lab.starts("a")[0].clone(), lab.starts("b")[0].clone()];
    let asked = Instant::now();
    let out = lab.control("--cancel", &id);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `--cancel` returns once the engines are ended.
    let took = asked.elapsed();
    assert!(pids.iter().all(|p| !pid_alive(p)), "{pids:?} still run");
    assert!(
        took < Duration::from_secs(2 + 10),
        "the cancel took {took:?}"
    );
    let r = result(&out);
    for u in ["a", "b"] {
        assert_eq!(row(&r, u)["reason"], "interrupted", "{r}");
    }
}

/// A TCP proxy to the server that the test can cut (every connection
/// closed, new ones closed on arrival) and restore.
struct Link {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Link {
    fn to(target: &str) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (c, o, target) = (cut.clone(), Arc::clone(&open), target.to_string());
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                if c.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(up) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut open = o.lock().unwrap();
                open.push(down.try_clone().unwrap());
                open.push(up.try_clone().unwrap());
                pipe(down.try_clone().unwrap(), up.try_clone().unwrap());
                pipe(up, down);
            }
        });
        Link { port, cut, open }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// `temporal workflow <what> -w ID -o json` on the server, as JSON.
fn temporal_json(address: &str, what: &str, id: &str) -> Value {
    let out = Command::new("temporal")
        .args([
            "workflow",
            what,
            "-w",
            id,
            "--address",
            address,
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Unit `a`'s engine (it ignores SIGTERM) names its session, then prints a
/// line every 0.3 s until `release` exists, then the rest of its answer.
fn held_unit(lab: &Lab) -> PathBuf {
    let capture = fixture(CAPTURE);
    let release = lab.path().join("release");
    let script = format!(
        "trap '' TERM INT\n\
         echo \"start a $$\" >> \"$FAKE_RUN_DIR/events.log\"\n\
         head -n 3 {c}\n\
         while [ ! -e {r} ]; do sed -n 4p {c}; sleep 0.3; done\n\
         tail -n +4 {c}\n\
         echo \"end a $$ 0\" >> \"$FAKE_RUN_DIR/events.log\"\n\
         exit 0\n",
        c = capture.display(),
        r = release.display()
    );
    lab.env.write("a/fake.env", script);
    lab.env
        .write("plan.toml", plan_units(&[("a", &[])], "stall_timeout = 4"));
    release
}

/// The server times the attempt out while its worker's link is cut; once
/// the link is back, the retry lands on that worker, which still runs the
/// attempt's engine. It attaches to that run: one engine, the plan done
/// (it was refused as `unit a is running under vf pid N`, exit 2, final).
#[test]
fn a_retry_landing_on_the_worker_still_running_its_attempt_attaches_to_it() {
    let Some(s) = server() else { return };
    let link = Link::to(&s.address);
    let lab = Lab::on(&link.address(), "attach-run");
    let release = held_unit(&lab);
    // A long grace: an engine being ended would hold the unit's lock.
    let w = lab.worker_env("w1", &[("VF_KILL_GRACE_MS", "30000")]);
    let id = lab.submit_detached();
    wait_for("the session id", Duration::from_secs(60), || {
        marker_has_session(&lab, "w1")
    });
    link.cut();
    wait_for(
        "the server to time the attempt out",
        Duration::from_secs(60),
        || {
            let h = temporal_json(&s.address, "show", &id).to_string();
            h.to_lowercase()
                .replace('_', "")
                .contains("activitytasktimedout")
        },
    );
    link.restore();
    wait_for("the retry to be taken", Duration::from_secs(90), || {
        let d = temporal_json(&s.address, "describe", &id);
        let pending = d["pendingActivities"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let taken = pending.iter().any(|p| {
            p["activityId"] == "2" && p["state"].as_str().unwrap_or("").contains("STARTED")
        });
        let status = d["workflowExecutionInfo"]["status"].as_str().unwrap_or("");
        taken || (!status.is_empty() && !status.contains("RUNNING"))
    });
    std::fs::write(&release, "").unwrap();
    let r = lab.follow(0);
    let a = row(&r, "a");
    assert_eq!(
        (a["state"].as_str(), a["host"].as_str()),
        (Some("done"), Some(w.host.as_str())),
        "{a}"
    );
    assert_eq!(lab.starts("a").len(), 1, "one engine: {:?}", lab.events());
}

/// `--follow` lost its server mid-plan: exit 3 (cannot reach), not 70, and
/// the plan's rows as last seen.
#[test]
fn a_follower_whose_server_went_away_exits_3_with_the_last_known_rows() {
    let Some(s) = own_server() else { return };
    let lab = Lab::on(&s.address, "gone");
    lab.unit("a", "FAKE_MODE=hang");
    lab.env.write("plan.toml", plan_units(&[("a", &[])], ""));
    let _w = lab.worker("w1");
    let (out, err) = (lab.path().join("follow.out"), lab.path().join("follow.err"));
    let mut c = lab.orchestrate(&["--follow", "--output", "jsonl"]);
    c.stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut follower = c.spawn().unwrap();
    wait_for("the follower to see a run", Duration::from_secs(60), || {
        std::fs::read_to_string(&out).is_ok_and(|t| t.contains("\"started\""))
    });
    s.stop();
    let gone = Instant::now();
    let status = loop {
        if let Some(st) = follower.try_wait().unwrap() {
            break st;
        }
        if gone.elapsed() > Duration::from_secs(120) {
            let _ = follower.kill();
            panic!("the follower still waits");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    for pid in lab.starts("a") {
        let _ = Command::new("kill").args(["-9", &pid]).status();
    }
    let stderr = read_text(&err);
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("lost Temporal while following workflow"),
        "{stderr}"
    );
    let text = read_text(&out);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "orchestrate.result", "{text}");
    assert_eq!(row(&last, "a")["state"], "running", "{text}");
}
