//! Serving a router over TCP with bounded connections: hyper's HTTP/1
//! connection driver, a cap on open connections, and a watchdog per
//! connection that closes it when the client is too slow to send a request
//! or has gone quiet.
//!
//! The two time-outs follow Go's `net/http` and nginx: a kept-alive
//! connection may wait [`ConnectionLimits::idle_timeout`] for the first byte
//! of its next request, and from then (or from `accept`, for a new
//! connection) the request's headers must be complete within
//! [`ConnectionLimits::header_read_timeout`]. hyper's own header time-out
//! starts as soon as it waits for a request, idle time included, so it
//! cannot tell a client that is idle from one that drips header bytes: it
//! is switched off and the watchdog does both. Once the headers are in, the
//! request time-out of [`crate::http`] takes over.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt as _;

/// How long connections may stay open, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Longest a client may take to send a request's headers: from `accept`
    /// for a new connection, from the request's first byte on a kept-alive
    /// one.
    pub header_read_timeout: Duration,
    /// Longest a kept-alive connection may wait, after its last response,
    /// for the first byte of another request.
    pub idle_timeout: Duration,
    /// Most connections open at once; further ones wait in the listen
    /// queue until one closes, and the open ones are still answered.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 10_000,
        }
    }
}

/// Closes the connection a request came on, without an answer (the test
/// controls' `drop_connection` fault). [`serve`] puts one in the extensions
/// of every request; after [`ConnectionCloser::close`], the connection's
/// task drops the connection, and with it the request's handler, so the
/// caller must not answer: it waits (`std::future::pending`) to be dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectionCloser(Arc<tokio::sync::Notify>);

impl ConnectionCloser {
    /// Asks the connection's task to close the connection now.
    pub(crate) fn close(&self) {
        self.0.notify_one();
    }
}

/// Serves `app` on `listener` until `shutdown` completes; then stops
/// accepting, lets every connection finish the request it is on, and
/// returns once all are closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A permit first: at the cap, connections wait in the kernel's
        // queue rather than being accepted and starved.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    handle_accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let watch = Arc::new(Watch::new());
        let io = TokioIo::new(Watched {
            inner: stream,
            watch: watch.clone(),
        });
        let router = app.clone();
        let in_service = watch.clone();
        let closer = ConnectionCloser::default();
        let closing = closer.0.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(closer.clone());
            let busy = in_service.request_started();
            let router = router.clone();
            async move {
                let response = router.oneshot(req).await;
                drop(busy);
                response
            }
        });
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            tokio::select! {
                served = connection => {
                    if let Err(e) = served {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                why = watch.expired(limits) => {
                    tracing::debug!(reason = why, "closing a connection");
                }
                () = closing.notified() => {
                    tracing::debug!("closing a connection without an answer, as a handler asked");
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Errors of `accept` that concern one connection are skipped; others
/// (such as running out of file descriptors) are logged and the loop
/// pauses a second, as hyper and axum do.
async fn handle_accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; pausing 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// What a connection's watchdog knows: when the connection began to wait
/// for a request, when that request's first byte came, whether a request
/// is being handled. Times are milliseconds since `origin`.
struct Watch {
    origin: Instant,
    /// When the current wait for a request began: `accept`, or the last
    /// byte written after the last response began.
    waiting_since: AtomicU64,
    /// One more than the millisecond of the first byte read while waiting;
    /// 0 while none has come.
    first_byte: AtomicU64,
    /// Requests whose handler has not answered yet.
    in_flight: AtomicUsize,
    /// No request has been answered on this connection yet.
    fresh: AtomicBool,
    /// Wakes the watchdog when a deadline may have moved earlier (a
    /// request answered, the first byte of the next one).
    moved: tokio::sync::Notify,
}

/// Marks a request as in flight until dropped.
struct Busy(Arc<Watch>);

impl Drop for Busy {
    fn drop(&mut self) {
        let watch = &self.0;
        watch.waiting_since.store(watch.now(), Ordering::Relaxed);
        watch.fresh.store(false, Ordering::Relaxed);
        watch.in_flight.fetch_sub(1, Ordering::Relaxed);
        watch.moved.notify_one();
    }
}

impl Watch {
    fn new() -> Watch {
        Watch {
            origin: Instant::now(),
            waiting_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            fresh: AtomicBool::new(true),
            moved: tokio::sync::Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn request_started(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.first_byte.store(0, Ordering::Relaxed);
        Busy(self.clone())
    }

    fn bytes_read(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.first_byte.load(Ordering::Relaxed) == 0
        {
            self.first_byte.store(self.now() + 1, Ordering::Relaxed);
            self.moved.notify_one();
        }
    }

    fn bytes_written(&self) {
        // A response still being written (a large page, a slow reader, an
        // event stream) is not idleness.
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.first_byte.load(Ordering::Relaxed) == 0
        {
            self.waiting_since.store(self.now(), Ordering::Relaxed);
        }
    }

    /// When the connection should be closed if nothing changes, and why;
    /// `None` while a request is being handled.
    fn deadline(&self, limits: ConnectionLimits) -> Option<(u64, &'static str)> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let first_byte = self.first_byte.load(Ordering::Relaxed);
        let waiting_since = self.waiting_since.load(Ordering::Relaxed);
        Some(if self.fresh.load(Ordering::Relaxed) {
            (
                waiting_since.saturating_add(ms(limits.header_read_timeout)),
                "no complete request headers within the header-read time-out",
            )
        } else if first_byte > 0 {
            (
                (first_byte - 1).saturating_add(ms(limits.header_read_timeout)),
                "no complete request headers within the header-read time-out",
            )
        } else {
            (
                waiting_since.saturating_add(ms(limits.idle_timeout)),
                "idle for the idle time-out",
            )
        })
    }

    /// Completes when the connection has passed one of its time-outs.
    async fn expired(&self, limits: ConnectionLimits) -> &'static str {
        loop {
            let now = self.now();
            let wait = match self.deadline(limits) {
                Some((at, why)) if at <= now => return why,
                Some((at, _)) => at - now,
                // Handled requests are bounded by the request time-out;
                // look again later.
                None => u64::try_from(limits.idle_timeout.as_millis()).unwrap_or(u64::MAX),
            };
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait.max(1))) => {}
                () = self.moved.notified() => {}
            }
        }
    }
}

/// A TCP stream that tells its [`Watch`] when bytes move.
struct Watched {
    inner: TcpStream,
    watch: Arc<Watch>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_millis(1_000),
            idle_timeout: Duration::from_millis(5_000),
            max_connections: 1,
        }
    }

    #[test]
    fn a_new_connection_must_send_its_headers_within_the_header_time_out() {
        let watch = Watch::new();
        let (at, why) = watch.deadline(limits()).unwrap();
        assert_eq!(at, 1_000);
        assert!(why.contains("header"));
    }

    #[test]
    fn a_kept_alive_connection_may_idle_then_must_finish_its_headers() {
        let watch = Arc::new(Watch::new());
        drop(watch.request_started());
        let answered = watch.waiting_since.load(Ordering::Relaxed);
        let (at, why) = watch.deadline(limits()).unwrap();
        assert_eq!((at, why), (answered + 5_000, "idle for the idle time-out"));
        watch.bytes_read();
        let first = watch.first_byte.load(Ordering::Relaxed) - 1;
        let (at, why) = watch.deadline(limits()).unwrap();
        assert_eq!(at, first + 1_000);
        assert!(why.contains("header"));
    }

    #[test]
    fn a_request_being_handled_has_no_deadline_here() {
        let watch = Arc::new(Watch::new());
        let busy = watch.request_started();
        assert_eq!(watch.deadline(limits()), None);
        drop(busy);
        assert!(watch.deadline(limits()).is_some());
    }
}
