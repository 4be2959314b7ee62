//! The server's stdin, watched for its EOF: rmcp drains the calls in flight
//! before it ends the service, so the server learns of the EOF here, at
//! once, to end the units of the calls that wait (docs/MCP.md, "Cancel, EOF
//! and kill -9").

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// A reader that calls `on_eof` once, at its first read of nothing.
pub struct EofWatch<R> {
    inner: R,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R> EofWatch<R> {
    pub fn new(inner: R, on_eof: impl FnOnce() + Send + 'static) -> EofWatch<R> {
        EofWatch {
            inner,
            on_eof: Some(Box::new(on_eof)),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let eof =
            matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() == before && buf.remaining() > 0;
        if (eof || matches!(r, Poll::Ready(Err(_))))
            && let Some(f) = self.on_eof.take()
        {
            f();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_eof_is_told_once_after_the_data() {
        let told = Arc::new(AtomicBool::new(false));
        let t = told.clone();
        let mut r = EofWatch::new(&b"abc"[..], move || t.store(true, Ordering::SeqCst));
        let mut buf = [0u8; 2];
        assert_eq!(r.read(&mut buf).await.unwrap(), 2);
        assert!(!told.load(Ordering::SeqCst));
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert!(told.load(Ordering::SeqCst));
    }
}
