//! Work moved off the runtime's thread onto tokio's blocking pool. Creating
//! a file or an fsync can wait on the file system's journal, and on the one
//! thread that carries every unit's events (`vf orchestrate`) that wait would
//! hold them all up. One rule for a task that does not finish, here.

use std::future::Future;

use crate::ground::error::{Result, VfError};

/// Starts `f` on the blocking pool now (call it inside the runtime); the
/// future gives its value. `Err` says why it did not finish: it panicked
/// (the panic was reported on stderr as it happened) or the runtime is
/// shutting down.
pub fn run<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> impl Future<Output = std::result::Result<T, String>> {
    let job = tokio::task::spawn_blocking(f);
    async move {
        job.await.map_err(|e| match e.is_panic() {
            true => "it panicked".to_string(),
            false => "the runtime is shutting down".to_string(),
        })
    }
}

/// [`run`] for work with vf's own result: a task that did not finish is a
/// state failure, "`what` did not finish: …".
pub async fn run_vf<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    run(f)
        .await
        .map_err(|e| VfError::state(format!("{what} did not finish: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_comes_back_and_a_panic_is_an_error_not_a_crash() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (value, panicked, failed, ok) = rt.block_on(async {
            (
                run(|| 7).await,
                run(|| -> u8 { panic!("boom") }).await,
                run_vf("the write", || -> Result<()> { panic!("boom") }).await,
                run_vf("x", || Ok(3)).await,
            )
        });
        assert_eq!(value, Ok(7));
        assert_eq!(panicked, Err("it panicked".to_string()));
        let failed = failed.unwrap_err();
        assert_eq!(failed.to_string(), "the write did not finish: it panicked");
        assert_eq!(failed.exit_code(), VfError::state("").exit_code());
        assert_eq!(ok.unwrap(), 3);
    }
}
