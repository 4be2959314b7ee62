//! Windows: an engine's output pipe read with blocking reads, and its stop.

use std::fs::File;
use std::sync::Arc;

impl super::ChildPipe for tokio::process::ChildStdout {
    fn into_file(self) -> std::io::Result<File> {
        Ok(File::from(self.into_owned_handle()?))
    }
}

impl super::ChildPipe for tokio::process::ChildStderr {
    fn into_file(self) -> std::io::Result<File> {
        Ok(File::from(self.into_owned_handle()?))
    }
}

/// An anonymous pipe cannot be waited on with another handle, so the stop is
/// a flag, checked before and after each read. A read in progress ends when
/// the pipe closes: the engine's job is ended with its unit, and everything
/// in the job with it, so no stray process keeps the pipe open.
pub type StopWait = Arc<std::sync::atomic::AtomicBool>;

pub struct StopSignal(StopWait);

impl Drop for StopSignal {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

pub fn stop_pair() -> std::io::Result<(StopWait, StopSignal)> {
    let flag = StopWait::default();
    Ok((flag.clone(), StopSignal(flag)))
}

pub fn read_unless_stopped(src: &mut File, stop: &StopWait, buf: &mut [u8]) -> super::Got {
    use super::Got;
    use std::io::Read;
    let stopped = || stop.load(std::sync::atomic::Ordering::Acquire);
    loop {
        if stopped() {
            return Got::Stopped;
        }
        let got = match src.read(buf) {
            Ok(0) => Got::End,
            Ok(n) => Got::Bytes(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A closed pipe's other end reads as ERROR_BROKEN_PIPE: its end.
            Err(_) => Got::End,
        };
        return if stopped() { Got::Stopped } else { got };
    }
}
