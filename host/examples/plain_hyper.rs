//! Benchmark baseline: a plain hyper 1 server, built like esign's front (auto HTTP/1.1 +
//! HTTP/2 builder on a multi-thread tokio runtime), answering `GET /v1/test` with the same
//! JSON as esign and doing nothing else. Usage: `plain_hyper [ADDR]`; prints
//! `listening on http://ADDR`.

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;

const BODY: &str = r#"{"entity_id":"aaaaaaaaaaaaaaaa","entity_name":"Default","first_name":"Admin","last_name":"","user_id":"bbbbbbbbbbbbbbbb"}"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let builder = std::sync::Arc::new(auto::Builder::new(TokioExecutor::new()));
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        tokio::spawn(async move {
            let svc = service_fn(|_req| async {
                let resp = hyper::Response::builder()
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from_static(BODY.as_bytes())))
                    .unwrap();
                Ok::<_, Infallible>(resp)
            });
            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}
