//! Scripted fakes of two engines (`codex` the author, `claude` the
//! reviewer), on `PATH` in the test's dir. Each counts its runs in
//! `<dir>/runs/<engine>.count`, logs argv and stdin per run
//! (`<engine>.<n>.args` / `.stdin`), and on run N:
//! - `<engine>.<n>.write`: its content is written to the file named on its first line;
//! - `<engine>.<n>.answer`: the fenced json block it answers with (else `{"ok":true}`);
//! - `<engine>.<n>.hang`: it writes `<engine>.<n>.started` and sleeps.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{TempDir, fixture, no_config, run_bounded, tempdir, vf, write_exe};

pub struct Lab {
    _dir: TempDir,
    pub dir: PathBuf,
}

const FAKE: &str = r#"#!/usr/bin/env bash
if [ "${1:-}" = "--version" ]; then echo "@VERSION@"; exit 0; fi
runs="@RUNS@"; me="@ENGINE@"
n=$(cat "$runs/$me.count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$runs/$me.count"
printf '%s\n' "$@" > "$runs/$me.$n.args"
[ -t 0 ] || cat > "$runs/$me.$n.stdin"
if [ -f "$runs/$me.$n.hang" ]; then : > "$runs/$me.$n.started"; sleep 300; fi
if [ -f "$runs/$me.$n.write" ]; then
  target=$(head -n 1 "$runs/$me.$n.write"); tail -n +2 "$runs/$me.$n.write" > "$target"
fi
answer='{"ok":true}'
[ -f "$runs/$me.$n.answer" ] && answer=$(cat "$runs/$me.$n.answer")
@BODY@
"#;

/// Codex's JSONL: a thread, the answer, the usage.
const CODEX_BODY: &str = r#"python3 - "$answer" <<'PY'
import json, sys
text = "Done.\n\n```json\n" + sys.argv[1] + "\n```\n"
print(json.dumps({"type": "thread.started", "thread_id": "01a229fa-c269-71a3-a12b-439065dbf14b"}))
print(json.dumps({"type": "turn.started"}))
print(json.dumps({"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": text}}))
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 20, "reasoning_output_tokens": 0}}))
PY"#;

impl Lab {
    pub fn new() -> Lab {
        let dir = tempdir();
        let path = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(path.join("runs")).unwrap();
        std::fs::create_dir_all(path.join("bin")).unwrap();
        std::fs::create_dir_all(path.join("w")).unwrap();
        let lab = Lab {
            _dir: dir,
            dir: path,
        };
        lab.fake("codex", "0.171.0", CODEX_BODY.to_string());
        lab.fake("claude", "2.1.332 (Claude Code)", lab.claude_body());
        lab
    }

    /// Claude's one `result` line (the capture's), its text our answer.
    fn claude_body(&self) -> String {
        let capture = fixture("claude/2.1.332/a_json.stdout.jsonl");
        format!(
            r#"python3 - "$answer" "{}" <<'PY'
import json, sys
lines = open(sys.argv[2]).read().splitlines()
for l in lines:
    o = json.loads(l)
    if o.get("type") == "result" or "result" in o:
        o["result"] = "Review:\n\n```json\n" + sys.argv[1] + "\n```\n"
    print(json.dumps(o))
PY"#,
            capture.display()
        )
    }

    fn fake(&self, engine: &str, version: &str, body: String) {
        let script = FAKE
            .replace("@VERSION@", version)
            .replace("@RUNS@", &self.runs().display().to_string())
            .replace("@ENGINE@", engine)
            .replace("@BODY@", &body);
        write_exe(&self.dir.join("bin").join(engine), &script);
    }

    pub fn runs(&self) -> PathBuf {
        self.dir.join("runs")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.join("w")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Sets what run `n` of `engine` does (`what`: write, answer, hang).
    pub fn on(&self, engine: &str, n: u32, what: &str, content: &str) {
        std::fs::write(self.runs().join(format!("{engine}.{n}.{what}")), content).unwrap();
    }

    pub fn count(&self, engine: &str) -> u32 {
        std::fs::read_to_string(self.runs().join(format!("{engine}.count")))
            .map_or(0, |s| s.trim().parse().unwrap())
    }

    pub fn stdin(&self, engine: &str, n: u32) -> String {
        std::fs::read_to_string(self.runs().join(format!("{engine}.{n}.stdin"))).unwrap_or_default()
    }

    pub fn args(&self, engine: &str, n: u32) -> String {
        std::fs::read_to_string(self.runs().join(format!("{engine}.{n}.args"))).unwrap()
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(vf());
        c.args(args)
            .current_dir(self.work())
            .stdin(std::process::Stdio::null());
        for k in crate::common::callers_settings() {
            c.env_remove(k);
        }
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap()
        );
        c.env("PATH", path)
            .env("VF_STATE_DIR", self.state())
            .env("VF_CONFIG", no_config())
            .env("VF_KILL_GRACE_MS", "500")
            .env("XDG_CACHE_HOME", self.dir.join("cache"));
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        run_bounded(self.cmd(args), Duration::from_secs(60))
    }

    pub fn marker(&self, unit: &str) -> serde_json::Value {
        let p = self.state().join("units").join(unit).join("marker.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.work().join(rel);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// The JSON result on stdout (`--output json`), or a panic naming what vf said.
pub fn result(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON result ({e}): stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Each round's `kind`, `n`, `outcome` as one line: `fix 1 done`.
pub fn rounds(v: &serde_json::Value) -> Vec<String> {
    v["rounds"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    format!(
                        "{} {} {}",
                        r["kind"].as_str().unwrap(),
                        r["n"],
                        r["outcome"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[allow(dead_code)]
pub fn exists(p: &Path) -> bool {
    p.exists()
}
